package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

// State is data/dispatch.json: the dispatcher's bookkeeping across
// restarts (format 1).
type State struct {
	Format int        `json:"format"`
	Daily  DailyState `json:"daily"`
}

// DailyState records the last host-local day the daily jobs ran.
type DailyState struct {
	Day   string    `json:"day"` // YYYY-MM-DD, host-local
	At    time.Time `json:"at"`
	Sweep string    `json:"sweep"` // "ok", "skipped: ..." (no worker without a live box) or the error
	// Swept are the workers the sweep was given; SweepSkipped those left
	// out because a box of theirs was live (its post-run snapshot covers
	// the store).
	Swept        []string `json:"swept"`
	SweepSkipped []string `json:"sweep_skipped,omitempty"`
	Prune        string   `json:"prune"`
	Failed       bool     `json:"failed,omitempty"`
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

// Today is the host-local day of the dispatcher's clock, in the org's
// host zone (config.Org.Zone), never the dispatcher's TZ.
func (d *Dispatcher) Today() string { return d.clock.Now().In(d.org.Zone()).Format("2006-01-02") }

// maybeDaily starts the daily jobs (`roster-snap sweep W...`, `roster-runs
// prune`) in the background when data/dispatch.json says they have not run
// on today's host-local day. The day is recorded when they finish, so a
// restart never skips them; a restart in the middle repeats them, which is
// harmless (both are idempotent).
//
// The sweep never snapshots a worker while a box of that worker is live
// (the run's own post-run snapshot covers its store; a sweep in the middle
// of a run would take the run's changes from it): it is given the workers
// with no live box at the moment it starts — called after the tick, so
// this tick's claims count — and the dispatcher claims nothing for those
// workers until the sweep ends. With no such worker the sweep is skipped
// and dispatch.json says so.
func (d *Dispatcher) maybeDaily(ctx context.Context) {
	d.dailyMu.Lock()
	defer d.dailyMu.Unlock()
	if d.dailyRun {
		return
	}
	// dispatch.json is read again only when it changed (this dispatcher
	// is its one writer, holding dispatch.lock) or the day turned: at
	// 10,000 workers its list of the swept is big, and a tick must not
	// cost what the home holds.
	today := d.Today()
	id, ok := statID(d.h.DispatchJSON())
	if ok && d.stateDay == today && d.stateID.same(id) {
		return
	}
	s, err := d.ReadState()
	if err != nil {
		d.logOnce("dispatch.json", err)
		return
	}
	d.clearBad("dispatch.json")
	if s.Daily.Day == today {
		d.stateDay, d.stateID = today, id
		if !ok {
			d.stateID = fileID{racy: true}
		}
		return
	}
	d.dailyRun = true
	quiet, busy, qerr := d.quietWorkers(ctx)
	d.holdForSweep(quiet)
	d.dailyBusy.Add(1)
	go func() {
		defer d.dailyBusy.Done()
		d.log.Info("daily jobs", "day", today, "sweep", names(quiet), "sweep_skipped", names(busy))
		s.Daily = DailyState{Day: today, At: d.clock.Now().UTC(), Swept: append([]string{}, quiet...), SweepSkipped: busy}
		switch {
		case qerr != nil:
			s.Daily.Sweep = "not run: " + qerr.Error()
			d.log.Error("daily sweep not run", "err", qerr)
		case len(quiet) == 0:
			s.Daily.Sweep = "skipped: no worker without a live box"
		default:
			s.Daily.Sweep = d.job(ctx, d.o.SnapProgram, "roster-snap", append([]string{"sweep"}, quiet...)...)
		}
		d.holdForSweep(nil)
		d.wake() // claims held for the sweep may go ahead
		s.Daily.Prune = d.job(ctx, d.o.RunsProgram, "roster-runs", "prune")
		s.Daily.Failed = (s.Daily.Sweep != "ok" && (len(quiet) > 0 || qerr != nil)) || s.Daily.Prune != "ok"
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

// quietWorkers splits the workers of the home into those with no live box
// (no claimed task, no live supervisor in box.json, no supervisor this
// dispatcher started still running) and the others, both sorted. A worker
// whose partition or spec cannot be read counts as busy: it is not swept.
func (d *Dispatcher) quietWorkers(ctx context.Context) (quiet, busy []string, err error) {
	all, err := config.ListWorkers(d.h)
	if err != nil {
		return nil, nil, err
	}
	ours := map[string]bool{}
	d.children.Range(func(_, w any) bool { ours[w.(string)] = true; return true })
	for _, w := range all {
		live := ours[w]
		if !live {
			lb, err := runs.LiveBoxes(d.h.Worker(w))
			live = err != nil || len(lb) > 0
		}
		if !live {
			var p *tms.Partition
			org := d.loadOrg()
			if org == nil {
				err = errors.New("org.toml unreadable")
			} else {
				p, _, err = d.open(org, w) // the cached spec: tms.Open would read every other spec for its uid check
			}
			n := 0
			if err == nil {
				n, err = p.LiveClaims(ctx)
			}
			live = err != nil || n > 0
		}
		if live {
			busy = append(busy, w)
		} else {
			quiet = append(quiet, w)
		}
	}
	return quiet, busy, nil
}

// names is a list of workers for a log line: the names, or with more than
// 20 of them the count and the first 20 (the state file keeps them all).
func names(ws []string) any {
	if len(ws) <= 20 {
		return ws
	}
	return fmt.Sprintf("%d workers: %s, …", len(ws), strings.Join(ws[:20], " "))
}

// holdForSweep sets the workers the dispatcher claims nothing for while
// the sweep runs (nil: none).
func (d *Dispatcher) holdForSweep(ws []string) {
	d.sweepMu.Lock()
	defer d.sweepMu.Unlock()
	d.sweeping = map[string]bool{}
	for _, w := range ws {
		d.sweeping[w] = true
	}
}

func (d *Dispatcher) beingSwept(w string) bool {
	d.sweepMu.Lock()
	defer d.sweepMu.Unlock()
	return d.sweeping[w]
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
	d.log.Info("daily job done", "job", name+" "+strings.Join(args, " "))
	return "ok"
}

// WaitDaily waits for daily jobs started by this dispatcher to finish.
func (d *Dispatcher) WaitDaily() { d.dailyBusy.Wait() }
