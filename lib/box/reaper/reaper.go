package reaper

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// forwarded are the signals passed on to the command.
var forwarded = []os.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT,
	unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH, unix.SIGCONT, unix.SIGALRM}

// Run runs args as the child and returns the exit status for pid 1.
// status (-1: none) is a descriptor on which pid 1 says "signal N" when a
// signal N killed the command: its exit status 128+N alone could also be
// one the command chose. It is made close-on-exec, so the command never
// holds it.
func Run(args []string, env []string, status int) (int, error) {
	// Not dumpable: the command runs as the same uid, and must not ptrace
	// pid 1, open its /proc/1/mem or take its descriptors (pidfd_getfd: the
	// status pipe) (Containment). The command's execve makes it dumpable
	// again; only pid 1 is shielded.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return 126, err
	}
	if status >= 0 {
		unix.CloseOnExec(status)
	}
	if len(args) == 0 {
		return 2, errors.New("no command")
	}
	if os.Getpid() != 1 {
		// Outside a pid namespace (tests): still adopt orphans.
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	}
	sigs := make(chan os.Signal, 32)
	signal.Notify(sigs, forwarded...)
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, unix.SIGCHLD)

	path, err := exec.LookPath(args[0])
	if err != nil {
		return 127, err
	}
	cmd := exec.Command(path, args[1:]...)
	cmd.Args[0] = args[0]
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return 126, err
	}
	child := cmd.Process.Pid
	for {
		select {
		case s := <-sigs:
			_ = unix.Kill(child, s.(syscall.Signal))
		case <-chld:
		}
		// Reap everything that is ready; stop when the command is gone.
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if err == unix.EINTR {
				continue
			}
			if pid <= 0 || err != nil {
				break
			}
			if pid == child {
				if ws.Signaled() {
					if status >= 0 {
						_, _ = unix.Write(status, []byte("signal "+strconv.Itoa(int(ws.Signal()))+"\n"))
					}
					return 128 + int(ws.Signal()), nil
				}
				return ws.ExitStatus(), nil
			}
		}
	}
}
