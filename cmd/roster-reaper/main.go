// Command roster-reaper is every box's pid 1 (docs/dispatch-and-box.md,
// "Pid 1 is a reaper"; lib/box/reaper): it runs the box's command, forwards
// the signals it gets to it, reaps every orphan, and exits with the
// command's status, which ends the box. With --gateway it also relays the
// box's own 127.0.0.1:3128 to the run's gateway socket (docs/gateway.md),
// and with --knowledge it clones the worker's knowledge repo through it
// into ~/knowledge before the command starts (docs/repos.md).
//
// It is a program of its own, bind-mounted into every box beside
// roster-task and roster-lock, because it starts with every box: linked
// with the reaper alone (no kong, no lib/cli: it reads its own command
// line) it starts in about half the CPU roster-task did, whose package
// initialisation is the whole host command line's (perf stat: 7.3 ms
// against 3.4 to 4.3 for this, each running /bin/true).
//
// Short-lived in the sense that matters: the runtime's container-aware
// GOMAXPROCS (re-read every second while it runs) is off; the box's own
// cgroup bounds its CPU.
//
//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0
package main

import (
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/roster-sh/roster/lib/box/reaper"
	"github.com/roster-sh/roster/lib/errs"
	"golang.org/x/sys/unix"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

const usage = `Usage: roster-reaper [--status-fd=N] [--gateway=ADDR,SOCK] [--knowledge=URL,BRANCH[,OBJECTS]] -- COMMAND [ARG]...

The box's pid 1: runs COMMAND, forwards signals to it, reaps orphans and
exits with COMMAND's status (128+N if a signal N killed it).

  --status-fd=N         say "signal N" on descriptor N when a signal killed COMMAND
  --gateway=ADDR,SOCK   also relay TCP ADDR to the Unix socket SOCK
  --knowledge=URL,BRANCH[,OBJECTS]
                        first clone URL into $HOME/knowledge and check out a
                        new BRANCH (empty: stay on main); with OBJECTS (a
                        folder: main, the commit of URL's main, and objects/,
                        its objects) make the clone from those, origin URL;
                        a failure is said on stderr and COMMAND runs
                        without it
  --version             print the version and exit
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run parses args and runs the command under the reaper; it returns pid
// 1's exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if os.Getenv("ROSTER_DUMP_GRAMMAR") == "1" { // cmd/roster's man-page test
		io.WriteString(stdout, "roster-reaper\nroster-reaper\t--gateway\nroster-reaper\t--knowledge\nroster-reaper\t--status-fd\nroster-reaper\t--version\n")
		return 0
	}
	status, gateway, knowledge := -1, "", ""
	for len(args) > 0 && args[0] != "--" {
		a := args[0]
		args = args[1:]
		switch {
		case a == "--help" || a == "-h":
			io.WriteString(stdout, usage)
			return 0
		case a == "--version":
			io.WriteString(stdout, "roster-reaper "+version+"\n")
			return 0
		case strings.HasPrefix(a, "--status-fd="):
			n, err := strconv.Atoi(strings.TrimPrefix(a, "--status-fd="))
			if err != nil || n <= 2 {
				return usageError(stderr, a+": a descriptor above 2")
			}
			status = n
		case strings.HasPrefix(a, "--gateway="):
			g := strings.TrimPrefix(a, "--gateway=")
			if addr, sock, ok := strings.Cut(g, ","); !ok || addr == "" || sock == "" {
				return usageError(stderr, a+": ADDR,SOCK")
			}
			gateway = g
		case strings.HasPrefix(a, "--knowledge="):
			knowledge = strings.TrimPrefix(a, "--knowledge=")
			if url, _, ok := strings.Cut(knowledge, ","); !ok || url == "" {
				return usageError(stderr, a+": URL,BRANCH (BRANCH may be empty)")
			}
		default:
			return usageError(stderr, "unknown argument "+strconv.Quote(a)+" (the command goes after --)")
		}
	}
	if len(args) < 2 {
		return usageError(stderr, "no command (give it after --)")
	}
	args = args[1:]
	if addr, sock, ok := strings.Cut(gateway, ","); ok {
		if _, err := reaper.Relay(addr, sock); err != nil {
			io.WriteString(stderr, "roster-reaper: gateway relay on "+addr+": "+err.Error()+"\n")
		}
	}
	if url, rest, ok := strings.Cut(knowledge, ","); ok {
		branch, objects, _ := strings.Cut(rest, ",")
		if status >= 0 {
			unix.CloseOnExec(status) // git must not hold it
		}
		dir := os.Getenv("HOME") + "/knowledge"
		if err := reaper.Knowledge(url, dir, branch, objects, os.Environ()); err != nil {
			io.WriteString(stderr, "roster-reaper: the knowledge clone at "+dir+": "+err.Error()+" (the run goes on without it)\n")
		}
	}
	code, err := reaper.Run(args, os.Environ(), status)
	if err != nil {
		io.WriteString(stderr, "roster-reaper: "+strconv.Quote(args[0])+": "+err.Error()+"\n")
	}
	return code
}

func usageError(stderr io.Writer, msg string) int {
	io.WriteString(stderr, "roster-reaper: "+msg+"\nsee 'roster-reaper --help'\n")
	return errs.ExitUsage
}
