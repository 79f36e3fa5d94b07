package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
)

// forwarded are the signals passed on to the command. The command shares
// our process group, so a terminal's ^C or ^\ reaches it directly: those
// two are not forwarded when we run in the terminal's foreground.
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP,
	syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// prepareCommand looks the command up and wires our own descriptors 0-2
// straight to it; nothing else is inherited (Go opens every file
// close-on-exec, the lock file included, and adds no ExtraFiles).
func prepareCommand(env *cli.Env, argv []string) (*exec.Cmd, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	if cmd.Err != nil {
		return nil, startError(env, argv[0], cmd.Err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = env.Stdin, env.Stdout, env.Stderr
	// If roster-lock dies (even by SIGKILL) the kernel drops the lock; the
	// command must not go on outside it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	return cmd, nil
}

// startError maps a command that cannot start to a shell's codes: 127 not
// found, 126 found but not executable.
func startError(env *cli.Env, name string, err error) error {
	code, why := 126, "cannot run it"
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		code, why = 127, "command not found"
	case errors.Is(err, fs.ErrPermission):
		why = "permission denied (not executable)"
	case errors.Is(err, syscall.ENOEXEC):
		why = "not an executable format (a script needs a #! line)"
	default:
		why = err.Error()
	}
	fmt.Fprintf(env.Stderr, "%s: error: %s: %s\n", env.Name, name, why)
	return &errs.Exit{Code: code}
}

// takeLock flocks f. A bounded wait blocks in flock(2) on a helper thread,
// so the lock is taken the instant it is released and the give-up time is
// exact; on giving up the process exits at once, which drops a lock the
// helper may have been granted meanwhile.
func takeLock(f *os.File, shared bool, wait time.Duration) error {
	ctx := context.Background()
	if wait <= 0 {
		return fsx.Flock(ctx, f, shared, wait)
	}
	if err := fsx.Flock(ctx, f, shared, 0); !errors.Is(err, errs.ErrBusy) {
		return err
	}
	got := make(chan error, 1)
	t := time.NewTimer(wait)
	go func() { got <- fsx.Flock(ctx, f, shared, fsx.Forever) }()
	select {
	case err := <-got:
		t.Stop()
		return err
	case <-t.C:
		return fmt.Errorf("still held after %s: %w", wait, errs.ErrBusy)
	}
}

// runCommand starts cmd (the lock is held), forwards signals to it and
// returns its exit status: 128+N if signal N killed it.
func runCommand(env *cli.Env, cmd *exec.Cmd) error {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded...)
	if err := cmd.Start(); err != nil {
		signal.Stop(sigs)
		return startError(env, cmd.Args[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			if (s == syscall.SIGINT || s == syscall.SIGQUIT) && terminalForeground() {
				continue // the terminal sent it to the command as well
			}
			cmd.Process.Signal(s) // gone already: nothing to forward to
		case err := <-done:
			return exitStatus(cmd, err)
		}
	}
}

func exitStatus(cmd *exec.Cmd, err error) error {
	ps := cmd.ProcessState
	if ps == nil {
		return err
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	switch {
	case ok && ws.Signaled():
		return &errs.Exit{Code: 128 + int(ws.Signal())}
	case ps.ExitCode() == 0:
		return nil
	}
	return &errs.Exit{Code: ps.ExitCode()}
}

// terminalForeground tells whether we are in the foreground process group
// of our controlling terminal, where the terminal's ^C and ^\ go to the
// whole group.
func terminalForeground() bool {
	tty, err := os.Open("/dev/tty")
	if err != nil {
		return false
	}
	defer tty.Close()
	pgrp, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == syscall.Getpgrp()
}
