package box

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// ExecRequest is a command to run inside a live box (`roster-box exec`).
type ExecRequest struct {
	Run    RunRef
	UID    int      // the box user's (the worker spec's uid)
	Argv   []string // the command
	Env    []string // added to the box's base environment
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Terminal gives the command a pseudo-terminal made inside the box
	// (exec -t): Stdin is copied to it and its output to Stdout (Stderr
	// unused). Term, when the operator's stdin is a terminal, is put in
	// raw mode while the command runs and its size passed on.
	Terminal bool
	Term     *os.File
}

// ExecRecord is one line of runs/RUN/exec.jsonl.
type ExecRecord struct {
	At       time.Time `json:"at"`
	Argv     []string  `json:"argv"`
	UID      int       `json:"uid"`
	Terminal bool      `json:"terminal,omitempty"`
	Pid      int       `json:"host_pid,omitempty"` // the roster-box exec that ran it
	Exit     *int      `json:"exit,omitempty"`     // nil: it did not start
	Signal   string    `json:"signal,omitempty"`
	Seconds  float64   `json:"seconds"`
	Error    string    `json:"error,omitempty"`
}

// execSignals are passed on to the exec'd process (without a terminal, a
// ^C at the operator's terminal reaches roster-box exec, not the box).
var execSignals = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT}

// Exec runs a command inside the live box of r.Run as an extra process of
// its container, as `docker exec` does: libcontainer's Run of a non-init
// process, which joins the box's namespaces and cgroup and gets the
// container's own limits — the box user's uid and gid, no capabilities in
// any set, no_new_privs, the same seccomp filter — with $HOME as its
// folder. The process started is roster-reaper, not dumpable, which runs
// the command as its child, as the box's pid 1 does. Its stdio are pipes,
// or with r.Terminal a pty made inside the box: never a descriptor of the
// operator's (execio.go). It is recorded in the run folder's exec.jsonl
// (once when it starts, once more when it ends). It returns the command's
// exit status (128+N for signal N). A run without a live container is
// exit 13.
func Exec(r ExecRequest) (int, error) {
	if len(r.Argv) == 0 {
		return 0, errs.New(errs.ErrUsage, "exec: no command (give it after --)")
	}
	c, err := libcontainer.Load(home.ContainerRoot, home.ContainerID(r.Run.ID))
	if err != nil {
		if errors.Is(err, libcontainer.ErrNotExist) || errors.Is(err, os.ErrNotExist) {
			return 0, errs.New(errs.ErrConflict, fmt.Sprintf("run %s has no live box", r.Run.ID))
		}
		return 0, fmt.Errorf("exec: load box %s: %w", r.Run.ID, err)
	}
	if st, err := waitStarted(c); err != nil || st != libcontainer.Running {
		return 0, errs.New(errs.ErrConflict, fmt.Sprintf("run %s has no live box (its container is %v)", r.Run.ID, st))
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer statusR.Close()
	env := append([]string{"HOME=" + BoxHome, "PATH=" + BoxPath, "ROSTER_WORKER=" + r.Run.Worker, "ROSTER_RUN=" + r.Run.ID}, r.Env...)
	p := &libcontainer.Process{
		Args: append([]string{BoxBin + "/" + ReaperTool, "--status-fd=3", "--"}, r.Argv...),
		Env:  env, UID: r.UID, GID: r.UID, Cwd: BoxHome,
		ExtraFiles: []*os.File{statusW},
		Init:       false,
	}
	x, err := newExecIO(r, p)
	if err != nil {
		statusW.Close()
		return 0, err
	}
	rec := ExecRecord{At: time.Now().UTC(), Argv: r.Argv, UID: r.UID, Terminal: r.Terminal, Pid: os.Getpid()}
	start := time.Now()
	err = c.Run(p)
	statusW.Close()
	if err == nil {
		if err = x.started(); err != nil {
			_ = p.Signal(unix.SIGKILL)
			_, _ = p.Wait()
		}
	}
	if err != nil {
		x.close()
		rec.Error = err.Error()
		_ = appendExec(r.Run.Dir, rec)
		return 0, fmt.Errorf("exec in run %s: %w", r.Run.ID, err)
	}
	if err := appendExec(r.Run.Dir, rec); err != nil {
		_ = p.Signal(unix.SIGKILL)
		_, _ = p.Wait()
		x.finish()
		return 0, err
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, execSignals...)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = p.Signal(s)
			case <-done:
				return
			}
		}
	}()
	ps, werr := p.Wait()
	signal.Stop(sigs)
	close(done)
	x.finish()
	rec.Seconds = time.Since(start).Seconds()
	code := -1
	if ps != nil {
		sig := readSignal(statusR)
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			sig = ws.Signal()
			code = 128 + int(sig)
		} else if code = ps.ExitCode(); sig <= 0 || code != 128+int(sig) {
			sig = 0
		}
		if sig > 0 {
			rec.Signal = unix.SignalName(sig)
		}
		rec.Exit = &code
	} else if werr != nil {
		rec.Error = werr.Error()
	}
	_ = appendExec(r.Run.Dir, rec)
	return code, nil
}

// appendExec appends rec to the run's exec.jsonl, under its own flock.
func appendExec(runDir string, rec ExecRecord) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(home.ExecLog(runDir), os.O_WRONLY|os.O_CREATE|os.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("record exec: %w", err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("record exec: %w", err)
	}
	return fsx.AppendLine(f, line)
}

// startGrace is how long exec waits for a box that is being started (its
// container created, its command not yet begun) to begin: an exec given
// right after a run starts joins the box rather than being refused.
const startGrace = 5 * time.Second

// waitStarted returns the container's status once it is no longer
// created, or created still after startGrace.
func waitStarted(c *libcontainer.Container) (libcontainer.Status, error) {
	deadline := time.Now().Add(startGrace)
	for {
		st, err := c.Status()
		if err != nil || st != libcontainer.Created || time.Now().After(deadline) {
			return st, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
