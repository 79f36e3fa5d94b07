package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
)

// State is data/dispatch.json: the dispatcher's bookkeeping across
// restarts (format 1).
type State struct {
	Format int        `json:"format"`
	Daily  DailyState `json:"daily"`
}

// DailyState records the last host-local day the daily jobs ran.
type DailyState struct {
	Day    string    `json:"day"` // YYYY-MM-DD, host-local
	At     time.Time `json:"at"`
	Sweep  string    `json:"sweep"` // "ok" or the error
	Prune  string    `json:"prune"`
	Failed bool      `json:"failed,omitempty"`
}

// ReadState reads data/dispatch.json; a missing file is the zero State, a
// corrupt one is refused (exit 14) and never overwritten.
func (d *Dispatcher) ReadState() (State, error) {
	var s State
	data, err := os.ReadFile(d.h.DispatchJSON())
	if errors.Is(err, os.ErrNotExist) {
		return State{Format: 1}, nil
	}
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, errs.New(errs.ErrRefused, fmt.Sprintf("%s: %v", d.h.DispatchJSON(), err))
	}
	if s.Format != 1 {
		return s, errs.New(errs.ErrRefused, fmt.Sprintf("%s: unknown format %d", d.h.DispatchJSON(), s.Format))
	}
	return s, nil
}

func (d *Dispatcher) writeState(s State) error {
	s.Format = 1
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return fsx.WriteFile(d.h.DispatchJSON(), append(data, '\n'), 0o600)
}

// Today is the host-local day of the dispatcher's clock.
func (d *Dispatcher) Today() string { return d.clock.Now().In(time.Local).Format("2006-01-02") }

// maybeDaily starts the daily jobs (`roster-snap sweep`, `roster-runs
// prune`) in the background when data/dispatch.json says they have not run
// on today's host-local day. The day is recorded when they finish, so a
// restart never skips them; a restart in the middle repeats them, which is
// harmless (both are idempotent).
func (d *Dispatcher) maybeDaily(ctx context.Context) {
	d.dailyMu.Lock()
	defer d.dailyMu.Unlock()
	if d.dailyRun {
		return
	}
	s, err := d.ReadState()
	if err != nil {
		d.logOnce("dispatch.json", err)
		return
	}
	d.clearBad("dispatch.json")
	today := d.Today()
	if s.Daily.Day == today {
		return
	}
	d.dailyRun = true
	d.dailyBusy.Add(1)
	go func() {
		defer d.dailyBusy.Done()
		d.log.Info("daily jobs", "day", today)
		s.Daily = DailyState{Day: today, At: d.clock.Now().UTC(),
			Sweep: d.job(ctx, d.o.SnapProgram, "roster-snap", "sweep"),
			Prune: d.job(ctx, d.o.RunsProgram, "roster-runs", "prune")}
		s.Daily.Failed = s.Daily.Sweep != "ok" || s.Daily.Prune != "ok"
		if ctx.Err() == nil { // interrupted: leave the day unrecorded, the next start runs them
			if err := d.writeState(s); err != nil {
				d.log.Error("cannot record the daily jobs", "err", err)
			}
		}
		d.dailyMu.Lock()
		d.dailyRun = false
		d.dailyMu.Unlock()
		d.wake()
	}()
}

// job runs one daily program and returns "ok" or what went wrong.
func (d *Dispatcher) job(ctx context.Context, override, name string, args ...string) string {
	prog, err := d.program(override, name)
	if err != nil {
		d.log.Error("daily job not run", "job", name, "err", err)
		return err.Error()
	}
	cmd := exec.CommandContext(ctx, prog, append(args, "--home", d.h.Dir)...)
	cmd.Env = append(os.Environ(), "ROSTER_HOME="+d.h.Dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("%s %v: %v: %s", name, args, err, trim(out))
		d.log.Error("daily job failed", "job", name, "err", msg)
		return msg
	}
	d.log.Info("daily job done", "job", name+" "+args[0])
	return "ok"
}

// WaitDaily waits for daily jobs started by this dispatcher to finish.
func (d *Dispatcher) WaitDaily() { d.dailyBusy.Wait() }
