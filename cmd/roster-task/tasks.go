package main

// TaskCmds holds the task verbs (add, relay, ls, show, ...): lib/tms's
// command line. Embedded in CLI.
type TaskCmds struct{}
