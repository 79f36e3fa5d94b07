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
// before the flock and the fork, and nothing linked whose package
// initialisation costs more than it is worth: no kong (args.go), no
// lib/cli (it prints through lib/cli/out).
//
// Short-lived: the runtime's container-aware GOMAXPROCS (a CPU quota kept
// open and re-read while it runs) is off. The runtime still reads
// /proc/self/cgroup, mountinfo and the quota once at start (Go 1.26 and
// 1.27 do, to count the setting's effect, before they look at GOMAXPROCS):
// nothing a program can set skips that.
//
//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/roster-sh/roster/lib/cli/out"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

// signals is set up before anything else (see startForwarder).
var signals *forwarder

func main() {
	signals = startForwarder()
	env := &out.Env{Name: "roster-lock", Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Ctx: context.Background()}
	os.Exit(runArgs(env, os.Args[1:]))
}

// runArgs parses args and does what they say; it returns the exit code.
func runArgs(env *out.Env, args []string) int {
	if os.Getenv("ROSTER_DUMP_GRAMMAR") == "1" {
		dumpGrammar(env.Stdout)
		return 0
	}
	o, err := parseArgs(args, os.LookupEnv)
	if err != nil {
		env.Error("%s", err)
		env.Hint("see 'roster-lock --help'")
		return errs.ExitUsage
	}
	switch o.show {
	case "help":
		usage(env.Stdout)
		return 0
	case "version":
		fmt.Fprintf(env.Stdout, "roster-lock %s\n", version)
		return 0
	}
	return out.Report(env, o.Run(env))
}

// Run takes the lock and runs the command, or lists the folder.
func (c *opts) Run(env *out.Env) error {
	if c.Ls {
		if c.Name != "" || len(c.Command) > 0 || c.Shared || c.Nonblock || c.WaitSet {
			return errs.New(errs.ErrUsage, "--ls takes no NAME, COMMAND, --shared, --nonblock or --wait")
		}
		dir, err := c.openFolder(true)
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
	case c.WaitSet:
		wait = c.Wait
	}

	// Look the command up before waiting for the lock: a typo fails at
	// once, as 127 or 126 like a shell.
	cmd, err := lookCommand(env, c.Command)
	if err != nil {
		return err
	}
	dir, err := c.openFolder(false)
	if err != nil {
		return err
	}
	f, err := fsx.OpenLockFile(dir, c.Name)
	dir.Close()
	if err != nil {
		return lockFileError(err)
	}
	defer f.Close()
	// A signal while we wait for the lock ends us with 128+N (deliver):
	// the handlers must be in place before the wait can begin.
	<-signals.ready
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
func (c *opts) busy(env *out.Env, f *os.File, wait time.Duration) error {
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
