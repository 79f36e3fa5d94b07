// Package out is what every roster program prints (docs/tools.md, "Output
// and exit codes"): "error:" and "hint:" lines on stderr, lib/errs' exit
// codes and aligned tables, escaped for a terminal. It links neither an
// argument parser nor encoding/json (JSON Lines are lib/cli's JSONLine),
// whose package initialisation a program that starts often pays at every
// start: roster-lock, benchmarked against flock(1), reads its own command
// line and prints through it without linking kong. lib/cli re-exports it
// for the rest.
package out
