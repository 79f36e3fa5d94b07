// Command roster is the suite's thin router: `roster X ...` runs
// `roster-X ...` (git-style), with a few friendlier routes (docs/tools.md,
// "roster"). It finds programs through lib/suite and exec(2)s them, so the
// exit status and signals pass straight through. No kong here: every word
// after the route belongs to the program it runs.
//
// Short-lived: the runtime's container-aware GOMAXPROCS probing (it reads
// /proc/self/cgroup, mountinfo and the CPU quota at every start) costs more
// than this program's whole job, so it is off.
//
//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/roster-sh/roster/lib/suite"
)

// version is set at build time.
var version = "dev"

// route maps the words a person types to a program and the words it gets.
type route struct {
	words   []string // what you type after "roster"
	prog    string   // roster-<prog>
	prepend []string // words put before the rest of the arguments
	help    string
}

var routes = []route{
	{[]string{"init"}, "task", []string{"init"}, "create data/ and a commented org.toml"},
	{[]string{"worker", "add"}, "task", []string{"worker", "add"}, "add a worker (its spec, uid and folders)"},
	{[]string{"worker", "ls"}, "task", []string{"worker", "ls"}, "list workers"},
	{[]string{"worker", "rm"}, "task", []string{"worker", "rm"}, "remove a worker"},
	{[]string{"worker", "pause"}, "task", []string{"worker", "pause"}, "dispatch claims nothing for the worker"},
	{[]string{"worker", "resume"}, "task", []string{"worker", "resume"}, "undo pause"},
	{[]string{"worker", "forget"}, "task", []string{"forget"}, "remove a conversation for good"},
	{[]string{"worker", "task"}, "task", nil, "roster-task VERB ...: the task management system"},
	{[]string{"worker", "run"}, "box", []string{"run"}, "an ad-hoc box for a worker"},
	{[]string{"worker", "snapshot"}, "snap", []string{"take"}, "snapshot a worker's store"},
	{[]string{"worker", "restore"}, "snap", []string{"restore"}, "restore a worker's store from a snapshot"},
	{[]string{"server", "start"}, "dispatch", nil, "run the dispatch loop"},
	{[]string{"server", "runs"}, "runs", nil, "roster-runs VERB ...: the run records"},
	{[]string{"chat"}, "chat", nil, "roster-chat VERB ...: chat accounts, conversations, pairing"},
	{[]string{"web"}, "web", []string{"serve"}, "the web console: prints a login URL, serves until stopped"},
	{[]string{"connection", "ls"}, "box", []string{"connections"}, "the folders a worker's boxes are given"},
	{[]string{"lock"}, "lock", nil, "run a command under a named lock on a store"},
	{[]string{"key"}, "task", []string{"key"}, "model keys: put one in the vault from stdin, list the source each provider uses"},
	{[]string{"doctor"}, "task", []string{"doctor"}, "check the host and the home; each problem with its fix"},
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "--help" || args[0] == "-h" {
		if len(args) > 1 && args[0] == "help" {
			words := args[1:]
			if isGroup(words[0]) && !routed(words) {
				groupUsage(stdout, words[0])
				return 0
			}
			r, rest := match(words)
			return runProgram(r, append(rest, "--help"), stderr)
		}
		usage(stdout)
		return 0
	}
	if args[0] == "--version" {
		fmt.Fprintln(stdout, "roster", version)
		return 0
	}
	if len(args[0]) > 0 && args[0][0] == '-' {
		say(stderr, "error", "unknown option %q before the command", args[0])
		say(stderr, "hint", "options go after the command: roster COMMAND [OPTIONS]; see 'roster help'")
		return 2
	}
	if isGroup(args[0]) && !routed(args) {
		if len(args) > 1 {
			say(stderr, "error", "%q is not a %s command", args[1], args[0])
		} else {
			say(stderr, "error", "%q needs a subcommand", args[0])
		}
		groupUsage(stderr, args[0])
		return 2
	}
	r, rest := match(args)
	return runProgram(r, rest, stderr)
}

// isGroup reports whether word opens multi-word routes (worker, server,
// connection): such a word alone, or with an unknown second word, is a
// usage error that lists the group, never a lookup of roster-WORD.
func isGroup(word string) bool {
	for _, r := range routes {
		if len(r.words) > 1 && r.words[0] == word {
			return true
		}
	}
	return false
}

// routed reports whether some route's words start args.
func routed(args []string) bool {
	for _, r := range routes {
		if len(r.words) <= len(args) && equal(r.words, args[:len(r.words)]) {
			return true
		}
	}
	return false
}

func groupUsage(w io.Writer, group string) {
	fmt.Fprintf(w, "usage: roster %s SUBCOMMAND [ARGS...]\n\n", group)
	for _, r := range routes {
		if r.words[0] == group {
			printRoute(w, r)
		}
	}
}

// match finds the longest route whose words start args; any other first word
// X routes to roster-X.
func match(args []string) (route, []string) {
	best := -1
	for i, r := range routes {
		if len(r.words) <= len(args) && equal(r.words, args[:len(r.words)]) {
			if best < 0 || len(r.words) > len(routes[best].words) {
				best = i
			}
		}
	}
	if best >= 0 {
		r := routes[best]
		rest := append(append([]string{}, r.prepend...), args[len(r.words):]...)
		return r, rest
	}
	return route{prog: args[0]}, args[1:]
}

func equal(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func runProgram(r route, rest []string, stderr io.Writer) int {
	name := "roster-" + r.prog
	path, err := suite.Find(name)
	if err != nil {
		say(stderr, "error", "%q is not a roster command (no %s found)", r.prog, name)
		say(stderr, "hint", "see 'roster help' for the commands; programs are looked up in $ROSTER_EXEC_PATH, next to roster, then on PATH")
		return 2
	}
	argv := append([]string{name}, rest...)
	err = syscall.Exec(path, argv, os.Environ())
	say(stderr, "error", "run %s: %v", path, err)
	return 1
}

// say prints a "roster: KIND: msg" line, the format of lib/cli's Message
// (which this program does not link: with kong it would double the
// wrapper's start-up, 1.3 ms to 2.8 ms measured). Its messages quote what
// came from outside with %q.
func say(w io.Writer, kind, format string, args ...any) {
	fmt.Fprintf(w, "roster: %s: %s\n", kind, fmt.Sprintf(format, args...))
}

func printRoute(w io.Writer, r route) {
	target := "roster-" + r.prog
	for _, p := range r.prepend {
		target += " " + p
	}
	fmt.Fprintf(w, "  %-20s %-28s %s\n", strings.Join(r.words, " "), "→ "+target, r.help)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: roster COMMAND [ARGS...]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, r := range routes {
		printRoute(w, r)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Any other word X runs roster-X. Programs found here:")
	for _, p := range suite.Programs() {
		fmt.Fprintf(w, "  %s\n", p)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'roster help COMMAND...' for a command's own help (roster help worker add); see roster(1), roster(7).")
}
