// Package reaper is a box's pid 1: it runs the box's command, forwards the
// signals it gets to it, reaps every orphan, and exits with the command's
// status (128+N when a signal N killed it), which ends the box: when pid 1
// of a pid namespace exits, the kernel kills everything left in it.
//
// It is pure Go so that the static roster-reaper can carry it into any root
// (`roster-reaper --status-fd=3 -- CMD...`); it changes no credentials, so
// it runs as the box user like the command.
package reaper
