package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/cli/out"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
)

// forwarded are the signals passed on to the command. The command shares
// our process group, so a terminal's ^C or ^\ reaches it directly: those
// two are not forwarded when we run in the terminal's foreground.
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP,
	syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// command is what runs under the lock.
type command struct {
	path string
	argv []string
}

// lookCommand finds the command before we wait for the lock, so a typo
// fails at once, with a shell's codes: 127 not found, 126 not executable.
func lookCommand(env *out.Env, argv []string) (*command, error) {
	path, err := exec.LookPath(argv[0])
	if err != nil && !errors.Is(err, exec.ErrDot) {
		return nil, startError(env, argv[0], err)
	}
	return &command{path: path, argv: argv}, nil
}

func startError(env *out.Env, name string, err error) error {
	code, why := 126, err.Error()
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		code, why = 127, "command not found"
	case errors.Is(err, fs.ErrPermission):
		why = "permission denied (not executable)"
	case errors.Is(err, syscall.ENOEXEC):
		why = "not an executable format (a script needs a #! line)"
	}
	env.Error("%s: %s", name, why)
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

// forwarder owns the signals roster-lock passes on. It is started first
// thing in main, so that os/signal's set-up (a round trip to its thread per
// signal) overlaps the parsing instead of delaying the lock.
type forwarder struct {
	ready chan struct{} // closed once the handlers are in place
	mu    sync.Mutex
	pid   int  // the command, once started
	done  bool // the command was reaped: its pid may be reused
}

func startForwarder() *forwarder {
	fw := &forwarder{ready: make(chan struct{})}
	// A signal we were started with ignored (INT and QUIT in a shell's
	// background job) stays ignored, for us and so for the command.
	var catch []os.Signal
	for _, s := range forwarded {
		if !signal.Ignored(s) {
			catch = append(catch, s)
		}
	}
	go func() {
		sigs := make(chan os.Signal, 16)
		signal.Notify(sigs, catch...)
		close(fw.ready)
		for s := range sigs {
			fw.deliver(s.(syscall.Signal))
		}
	}()
	return fw
}

func (fw *forwarder) deliver(s syscall.Signal) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	switch {
	case fw.pid == 0:
		// No command yet (parsing, waiting for the lock): end as the
		// signal would have ended us. The kernel drops the lock.
		os.Exit(128 + int(s))
	case fw.done:
	case (s == syscall.SIGINT || s == syscall.SIGQUIT) && terminalForeground():
		// The terminal sent it to the command as well.
	default:
		syscall.Kill(fw.pid, s)
	}
}

// runCommand runs the command (the lock is held) on our own descriptors
// 0-2, forwards signals to it and returns its status: 128+N if signal N
// killed it.
//
// It forks with syscall.ForkExec rather than os/exec: nothing but 0-2
// reaches the child (every other descriptor, the lock's included, is
// close-on-exec), and it skips os's one-off pidfd probe, a whole extra
// fork on the path benchmarked against flock(1).
func runCommand(env *out.Env, fw *forwarder, c *command) error {
	files := make([]uintptr, 3)
	for i := range files {
		files[i] = uintptr(i)
		if _, err := unix.FcntlInt(uintptr(i), unix.F_GETFD, 0); err != nil {
			files[i] = ^uintptr(0) // closed here: closed in the child too
		}
	}
	<-fw.ready
	fw.mu.Lock()
	// Pdeathsig (below) fires when the forking thread exits: pin this
	// goroutine to its thread from here on (not earlier: a locked main
	// goroutine makes every park before this cost a thread hand-off).
	runtime.LockOSThread()
	pid, err := syscall.ForkExec(c.path, c.argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: files,
		// If roster-lock dies (even by SIGKILL) the kernel drops the
		// lock; the command must not go on outside it.
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM},
	})
	if err == nil {
		fw.pid = pid
	}
	fw.mu.Unlock()
	if err != nil {
		return startError(env, c.argv[0], err)
	}

	// The forwarder must never signal a reaped pid (it could be reused):
	// wait for the exit without reaping, then reap under the mutex.
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	fw.mu.Lock()
	fw.done = true
	var ws syscall.WaitStatus
	for {
		_, err = syscall.Wait4(pid, &ws, 0, nil)
		if err != syscall.EINTR {
			break
		}
	}
	fw.mu.Unlock()
	switch {
	case err != nil:
		return fmt.Errorf("wait for %s: %w", c.argv[0], err)
	case ws.Signaled():
		return &errs.Exit{Code: 128 + int(ws.Signal())}
	case ws.ExitStatus() != 0:
		return &errs.Exit{Code: ws.ExitStatus()}
	}
	return nil
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
