// Package webtest builds a real home for the web console's tests and
// benchmark, through the libraries the command line writes with: `roster
// init` and `worker add` (config), tasks, templates, claims, a box's
// proposal and the host's attestation (tms), run records (runs), a
// conversation's log (chat). Nothing is mocked; only the runs' files are
// written as a supervisor would leave them, since no box runs here.
package webtest
