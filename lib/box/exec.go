package box

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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
}

// ExecRecord is one line of runs/RUN/exec.jsonl.
type ExecRecord struct {
	At      time.Time `json:"at"`
	Argv    []string  `json:"argv"`
	UID     int       `json:"uid"`
	Pid     int       `json:"host_pid,omitempty"` // the roster-box exec that ran it
	Exit    *int      `json:"exit,omitempty"`     // nil: it did not start
	Signal  string    `json:"signal,omitempty"`
	Seconds float64   `json:"seconds"`
	Error   string    `json:"error,omitempty"`
}

// Exec runs a command inside the live box of r.Run as an extra process of
// its container, as `docker exec` does: libcontainer's Run of a non-init
// process, which joins the box's namespaces and cgroup and gets the
// container's own limits — the box user's uid and gid, no capabilities in
// any set, no_new_privs, the same seccomp filter — with $HOME as its
// folder and no terminal of its own. It is recorded in the run folder's
// exec.jsonl (once when it starts, once more when it ends). It returns
// the command's exit status (128+N for signal N). A run without a live
// container is exit 13.
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
	if st, err := c.Status(); err != nil || st != libcontainer.Running {
		return 0, errs.New(errs.ErrConflict, fmt.Sprintf("run %s has no live box (its container is %v)", r.Run.ID, st))
	}
	env := append([]string{"HOME=" + BoxHome, "PATH=" + BoxPath, "ROSTER_WORKER=" + r.Run.Worker, "ROSTER_RUN=" + r.Run.ID}, r.Env...)
	p := &libcontainer.Process{
		Args: r.Argv, Env: env, UID: r.UID, GID: r.UID, Cwd: BoxHome,
		Stdin: r.Stdin, Stdout: r.Stdout, Stderr: r.Stderr,
		Init: false,
	}
	rec := ExecRecord{At: time.Now().UTC(), Argv: r.Argv, UID: r.UID, Pid: os.Getpid()}
	start := time.Now()
	if err := c.Run(p); err != nil {
		rec.Error = err.Error()
		_ = appendExec(r.Run.Dir, rec)
		return 0, fmt.Errorf("exec in run %s: %w", r.Run.ID, err)
	}
	if err := appendExec(r.Run.Dir, rec); err != nil {
		_ = p.Signal(unix.SIGKILL)
		_, _ = p.Wait()
		return 0, err
	}
	ps, werr := p.Wait()
	rec.Seconds = time.Since(start).Seconds()
	code := -1
	if ps != nil {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			rec.Signal = unix.SignalName(ws.Signal())
			code = 128 + int(ws.Signal())
		} else {
			code = ps.ExitCode()
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
