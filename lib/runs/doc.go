// Package runs reads and writes run records (runs/RUN/run.json, box.json)
// and answers the one question everybody asks of a run: is its box alive?
//
// Liveness is pure Go (no libcontainer): the supervisor's pid, its process
// start time and the boot id must all match, because a bare pid is reused.
package runs
