package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/suite"
)

func (d *Dispatcher) program(override, name string) (string, error) {
	if override != "" {
		return override, nil
	}
	p, err := suite.Find(name)
	if err != nil {
		return "", fmt.Errorf("%s: not found next to this program, in $ROSTER_EXEC_PATH or on PATH", name)
	}
	return p, nil
}

// startBox starts `roster-box run WORKER --task ID --run RUN` detached: its
// own session (setsid), so a signal to the dispatcher's process group or
// its exit never reaches it; stdin from /dev/null; stdout and stderr to
// runs/RUN/supervisor.log. A goroutine waits for it so it never lingers
// as a zombie while the dispatcher lives; the dispatcher never blocks on it
// (only --until-idle waits for every supervisor it started to exit).
func (d *Dispatcher) startBox(worker, task, run string) error {
	prog, err := d.program(d.o.BoxProgram, "roster-box")
	if err != nil {
		return err
	}
	runDir := d.h.Worker(worker).Run(run)
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(home.SupervisorLog(runDir), os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	defer out.Close() // the child has its own copy
	null, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer null.Close()
	cmd := exec.Command(prog, "run", worker, "--task", task, "--run", run, "--home", d.h.Dir)
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), "ROSTER_HOME="+d.h.Dir)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	d.children.Store(run, worker)
	d.running.Add(1)
	go func() {
		err := cmd.Wait()
		d.children.Delete(run)
		d.running.Add(-1)
		if err != nil {
			d.log.Debug("supervisor exited", "run", run, "status", err)
		}
		d.logRunEnd(worker, task, run)
		d.childExited.Store(true) // if it died without attesting, reclaim now, not in 30 s
		d.wake()                  // its task changed (attested) or its claim is now dead: look again
	}()
	return nil
}

// isOurChild reports whether run's supervisor is a child of this
// dispatcher that has not exited yet.
func (d *Dispatcher) isOurChild(run string) bool {
	_, ok := d.children.Load(run)
	return ok
}

// reap runs `roster-box reap RUN`: destroy a container that outlived its
// supervisor and record the run's end. It is the only way the dispatcher
// touches a container.
func (d *Dispatcher) reap(ctx context.Context, run string) error {
	prog, err := d.program(d.o.BoxProgram, "roster-box")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, "reap", run, "--home", d.h.Dir)
	cmd.Env = append(os.Environ(), "ROSTER_HOME="+d.h.Dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("roster-box reap %s: %v: %s", run, err, trim(out))
	}
	return nil
}

func trim(b []byte) string {
	const max = 400
	if len(b) > max {
		b = b[len(b)-max:]
	}
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return string(b)
}

// logRunEnd logs how a run ended, from its run.json (worker, task, run,
// attested, ended, reason), once: for a run this dispatcher started when
// its supervisor exits, for an adopted one when a reclaim pass finds it
// finished.
func (d *Dispatcher) logRunEnd(worker, task, run string) {
	if _, done := d.ended.LoadOrStore(run, true); done {
		return
	}
	rec, err := runs.ReadRecord(d.h.Worker(worker).Run(run))
	if err != nil || rec.Ended == "" {
		d.log.Warn("run ended without a record of its end", "worker", worker, "task", task, "run", run)
		return
	}
	reason := ""
	if ev := rec.Evidence; ev != nil {
		reason = ev.Reason
		if reason == "" {
			reason = ev.Note
		}
	}
	if rec.Ended == "ceiling" {
		reason = "ceiling " + rec.Ceiling
	}
	lvl := slog.LevelInfo
	if rec.Attested == "failed" {
		lvl = slog.LevelWarn
	}
	d.log.Log(context.Background(), lvl, "run ended", "worker", worker, "task", task, "run", run,
		"attested", rec.Attested, "ended", rec.Ended, "reason", reason)
}
