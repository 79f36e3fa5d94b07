// Command roster-lock runs a command while holding a named flock(2) lock in
// a worker's lock folder (docs/tools.md "roster-lock", docs/store.md "Locks"), and
// lists which locks are held. It is util-linux flock(1) for roster's lock
// folders, hardened for folders a box can write.
//
// The whole job, in order: check the name; find the lock folder (--worker,
// --store, or inside a box $HOME/store); open it O_DIRECTORY|O_NOFOLLOW;
// open the lock file with fsx.OpenLockFile (never follows a link, never
// blocks on a FIFO, creates a missing one 0666 with O_EXCL); flock it; run
// the command with the lock descriptor close-on-exec, forwarding TERM, INT,
// HUP, QUIT, USR1 and USR2; exit with its status (128+signal if it was
// killed). The kernel drops the lock when roster-lock dies, and the command
// then gets SIGTERM, so it never goes on running outside its lock.
//
// Start-up is on the benchmark against flock(1): no work beyond parsing
// before the flock and the fork.
//
// Short-lived: the runtime's container-aware GOMAXPROCS probing (it reads
// /proc/self/cgroup, mountinfo and the CPU quota at every start) costs more
// than this program's whole job, so it is off.
//
//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alecthomas/kong"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// CLI is the grammar: one command, NAME -- COMMAND, or --ls.
type CLI struct {
	cli.Globals

	Name    string   `arg:"" optional:"" help:"The lock's name: a letter, digit or _, then up to 127 of A-Z a-z 0-9 . _ - ('store' is the whole-store lock)."`
	Command []string `arg:"" optional:"" passthrough:"partial" help:"The command to run while the lock is held (after --)."`

	Shared           bool     `short:"s" help:"Take the lock shared: shared holders coexist, an exclusive one excludes them all."`
	Nonblock         bool     `short:"n" xor:"wait" help:"Fail at once with exit 11 if the lock is held."`
	Wait             waitFlag `short:"w" xor:"wait" placeholder:"DUR" help:"Give up with exit 11 after DUR (300ms, 5s, 2m; a bare number is seconds). Default: wait forever."`
	ConflictExitCode int      `short:"E" default:"11" placeholder:"N" help:"Exit with N instead of 11 when the lock stays busy."`
	Worker           string   `xor:"where" placeholder:"W" help:"Use worker W's lock folder, data/workers/W/locks."`
	Store            string   `xor:"where" placeholder:"DIR" help:"Use DIR/.locks; a worker's own store means --worker. Default inside a box: $HOME/store."`
	Ls               bool     `help:"List the lock files in the folder and who holds them."`
	JSON             bool     `name:"json" help:"With --ls: print JSON Lines."`
}

// waitFlag is --wait: a Go duration or a bare number of seconds (as
// flock(1) -w takes).
type waitFlag struct {
	d   time.Duration
	set bool
}

func (w *waitFlag) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("duration", &s); err != nil {
		return err
	}
	d, err := parseWait(s)
	if err != nil {
		return err
	}
	w.d, w.set = d, true
	return nil
}

// signals is set up before anything else (see startForwarder).
var signals *forwarder

func main() {
	signals = startForwarder()
	if c, g, ok := fastArgs(os.Args[1:]); ok {
		env := &cli.Env{Name: "roster-lock", Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Ctx: context.Background()}
		os.Exit(cli.Report(env, c.Run(g, env)))
	}
	os.Exit(cli.Main("roster-lock", &CLI{}, os.Args[1:]))
}

// fastArgs reads the common invocation without kong, whose model of the
// grammar costs about a tenth of the benchmarked run against flock(1)
// (2026-12-01, 2 cores, the median of 600 interleaved runs of `roster-lock
// --home H --worker w x -- /bin/true`: 4.4 ms, 4.8 ms without fastArgs;
// flock(1) 2.3 ms):
// NAME, --home, --worker or --store, --shared and --nonblock, each at
// most once, in any order, then -- and a command that does not start
// with "-". It gives what kong's parse gives (TestFastArgsParseLikeKong,
// FuzzFastArgs); anything else (--help, --version, --wait, --ls, a
// missing or repeated piece, an empty or dash-led value, an argument
// that is not UTF-8 (kong replaces its bad bytes, the command's too),
// ROSTER_HOME set without --home) is left to kong and its messages.
func fastArgs(args []string) (*CLI, *cli.Globals, bool) {
	c := &CLI{ConflictExitCode: errs.ExitBusy}
	g := &cli.Globals{}
	seen := map[string]bool{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest := args[i+1:]
			if len(rest) == 0 || rest[0] == "" || rest[0][0] == '-' || c.Name == "" ||
				(c.Worker != "") == (c.Store != "") {
				return nil, nil, false
			}
			if !seen["home"] {
				if _, set := os.LookupEnv("ROSTER_HOME"); set {
					return nil, nil, false
				}
				g.Home = "."
			}
			for _, r := range rest {
				if !utf8.ValidString(r) {
					return nil, nil, false
				}
			}
			c.Command = rest
			return c, g, true
		}
		if !utf8.ValidString(a) { // kong replaces bad bytes; leave it to kong
			return nil, nil, false
		}
		var flag, value string
		switch {
		case a == "-s" || a == "--shared":
			flag, c.Shared = "shared", true
		case a == "-n" || a == "--nonblock":
			flag, c.Nonblock = "nonblock", true
		case a == "--home" || a == "--worker" || a == "--store":
			if i+1 >= len(args) {
				return nil, nil, false
			}
			flag, value = a[2:], args[i+1]
			i++
		case strings.HasPrefix(a, "--home=") || strings.HasPrefix(a, "--worker=") || strings.HasPrefix(a, "--store="):
			flag, value, _ = strings.Cut(a[2:], "=")
		case a != "" && a[0] != '-' && c.Name == "":
			flag, c.Name = "name", a
		default:
			return nil, nil, false
		}
		if seen[flag] {
			return nil, nil, false
		}
		seen[flag] = true
		if flag == "home" || flag == "worker" || flag == "store" {
			if value == "" || value[0] == '-' || !utf8.ValidString(value) {
				return nil, nil, false
			}
		}
		switch flag {
		case "home":
			g.Home = value
		case "worker":
			c.Worker = value
		case "store":
			c.Store = value
		}
	}
	return nil, nil, false
}

// Run takes the lock and runs the command, or lists the folder.
func (c *CLI) Run(g *cli.Globals, env *cli.Env) error {
	if len(c.Command) > 0 && c.Command[0] == "--" {
		c.Command = c.Command[1:]
	}
	if c.Ls {
		if c.Name != "" || len(c.Command) > 0 || c.Shared || c.Nonblock || c.Wait.set {
			return errs.New(errs.ErrUsage, "--ls takes no NAME, COMMAND, --shared, --nonblock or --wait")
		}
		dir, err := c.openFolder(g, true)
		if err != nil {
			return err
		}
		if dir == nil { // a store with no .locks yet: no lock exists
			return listLocks(env, nil, c.JSON)
		}
		defer dir.Close()
		return listLocks(env, dir, c.JSON)
	}
	if c.JSON {
		return errs.New(errs.ErrUsage, "--json goes with --ls")
	}
	if c.Name == "" {
		return errs.WithHint(errs.New(errs.ErrUsage, "a lock NAME is required"),
			"roster-lock NAME [--worker W | --store DIR] -- COMMAND [ARG]..., or roster-lock --ls")
	}
	if err := home.ValidLock(c.Name); err != nil {
		return err
	}
	if len(c.Command) == 0 {
		return errs.WithHint(errs.New(errs.ErrUsage, "a COMMAND to run under the lock is required"),
			"roster-lock "+c.Name+" ... -- COMMAND [ARG]...")
	}
	if c.ConflictExitCode < 0 || c.ConflictExitCode > 255 {
		return errs.New(errs.ErrUsage, fmt.Sprintf("--conflict-exit-code %d: must be 0 to 255", c.ConflictExitCode))
	}
	wait := fsx.Forever
	switch {
	case c.Nonblock:
		wait = 0
	case c.Wait.set:
		wait = c.Wait.d
	}

	// Look the command up before waiting for the lock: a typo fails at
	// once, as 127 or 126 like a shell.
	cmd, err := lookCommand(env, c.Command)
	if err != nil {
		return err
	}
	dir, err := c.openFolder(g, false)
	if err != nil {
		return err
	}
	f, err := fsx.OpenLockFile(dir, c.Name)
	dir.Close()
	if err != nil {
		return lockFileError(err)
	}
	defer f.Close()
	if err := takeLock(f, c.Shared, wait); err != nil {
		if errors.Is(err, errs.ErrBusy) {
			return c.busy(env, f, wait)
		}
		return err
	}
	return runCommand(env, signals, cmd)
}

// busy reports a lock that stayed held, naming the holder where /proc
// shows it, and picks the exit code.
func (c *CLI) busy(env *cli.Env, f *os.File, wait time.Duration) error {
	msg := fmt.Sprintf("lock %q is held", c.Name)
	if who := describeHolders(f); who != "" {
		msg += " by " + who
	}
	if wait > 0 {
		msg += fmt.Sprintf("; gave up after %s", wait)
	}
	if c.ConflictExitCode == errs.ExitBusy {
		return errs.New(errs.ErrBusy, msg)
	}
	env.Error("%s", msg)
	return &errs.Exit{Code: c.ConflictExitCode}
}

// lockFileError gives a lock file that cannot be opened its exit code: a
// planted symlink, FIFO or folder is refused (14) and left untouched.
func lockFileError(err error) error {
	switch {
	case errors.Is(err, fsx.ErrSymlink), errors.Is(err, fsx.ErrNotRegular):
		return errs.WithHint(errs.New(errs.ErrRefused, err.Error()),
			"a lock file must be a regular file; remove what is there and retry")
	case errors.Is(err, os.ErrNotExist):
		return errs.New(errs.ErrNoHome, err.Error())
	}
	return err
}
