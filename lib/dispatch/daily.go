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

// SweepBatch is how many workers one `roster-snap sweep` of the daily
// sweep is given. The sweep goes through the home in batches, one at a
// time (its concurrency is one process), and only the batch being swept is
// held from claims: a task filed meanwhile waits at most for the batch it
// falls in, never for a sweep of every worker (at 10,000 workers that is
// minutes).
var SweepBatch = 16

// sweepRun is a daily sweep under way. Its batches are chosen on the
// loop's goroutine (maybeDaily, WaitDaily), which owns the dispatcher's
// caches and claims; the sweep's goroutine asks for the next one.
type sweepRun struct {
	ctx            context.Context
	todo           []string
	ask            chan struct{} // the sweep's goroutine wants its next batch
	give           chan []string // the batch; nil: none left
	swept, skipped []string
	err            error // the workers could not be listed
}

// maybeDaily starts the daily jobs (`roster-snap sweep W...`, `roster-runs
// prune`) in the background when data/dispatch.json says they have not run
// on today's host-local day, and while they run hands the sweep its next
// batch. The day is recorded when they finish, so a restart never skips
// them; a restart in the middle repeats them, which is harmless (both are
// idempotent).
//
// The sweep never snapshots a worker while a box of that worker is live
// (the run's own post-run snapshot covers its store; a sweep in the middle
// of a run would take the run's changes from it): each batch is given the
// workers of it with no live box at the moment it starts — chosen after a
// tick, so that tick's claims count — and the dispatcher claims nothing
// for those workers until the batch ends. With no such worker in the whole
// home the sweep is skipped and dispatch.json says so.
func (d *Dispatcher) maybeDaily(ctx context.Context) {
	d.dailyMu.Lock()
	defer d.dailyMu.Unlock()
	if d.dailyRun {
		if d.sweep != nil {
			d.serveSweep(d.sweep)
		}
		return
	}
	// dispatch.json is read again only when it changed (this dispatcher
	// is its one writer, holding dispatch.lock) or the day turned: at
	// 10,000 workers its list of the swept is big, and a tick must not
	// cost what the home holds.
	today := d.Today()
	id, ok := fsx.StatID(d.h.DispatchJSON())
	if ok && d.stateDay == today && d.stateID.Same(id) {
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
			d.stateID = fsx.Untrusted
		}
		return
	}
	d.dailyRun = true
	sr := &sweepRun{ctx: ctx, ask: make(chan struct{}, 1), give: make(chan []string, 1)}
	sr.todo, sr.err = config.ListWorkers(d.h)
	d.sweep = sr
	first := d.nextBatch(sr)
	d.dailyBusy.Add(1)
	go func() {
		defer d.dailyBusy.Done()
		d.log.Info("daily jobs", "day", today, "workers", len(sr.todo)+len(first), "batch", SweepBatch)
		s.Daily = DailyState{Day: today, At: d.clock.Now().UTC()}
		s.Daily.Sweep = d.runSweep(ctx, sr, first)
		s.Daily.Swept, s.Daily.SweepSkipped = sr.swept, sr.skipped
		if s.Daily.Swept == nil {
			s.Daily.Swept = []string{}
		}
		d.log.Info("daily sweep done", "sweep", s.Daily.Sweep, "swept", names(sr.swept), "sweep_skipped", names(sr.skipped))
		s.Daily.Prune = d.job(ctx, d.o.RunsProgram, "roster-runs", "prune")
		s.Daily.Failed = (s.Daily.Sweep != "ok" && (len(sr.swept) > 0 || sr.err != nil)) || s.Daily.Prune != "ok"
		if ctx.Err() == nil { // interrupted: leave the day unrecorded, the next start runs them
			if err := d.writeState(s); err != nil {
				d.log.Error("cannot record the daily jobs", "err", err)
			}
		}
		d.dailyMu.Lock()
		d.dailyRun, d.sweep = false, nil
		d.dailyMu.Unlock()
		d.wake()
	}()
}

// runSweep runs `roster-snap sweep` on each batch the loop hands it,
// starting with first, and returns "ok", why it was skipped or not run,
// or the first failure.
func (d *Dispatcher) runSweep(ctx context.Context, sr *sweepRun, first []string) string {
	if sr.err != nil {
		d.log.Error("daily sweep not run", "err", sr.err)
		return "not run: " + sr.err.Error()
	}
	result := ""
	for b := first; b != nil; {
		if len(b) > 0 {
			if r := d.job(ctx, d.o.SnapProgram, "roster-snap", append([]string{"sweep"}, b...)...); r != "ok" && result == "" {
				result = r
			}
		}
		d.holdForSweep(nil)
		sr.ask <- struct{}{}
		d.wake() // claims held for the batch may go ahead; and the next batch
		select {
		case b = <-sr.give:
		case <-ctx.Done():
			return "interrupted"
		}
	}
	switch {
	case result != "":
		return result
	case len(sr.swept) == 0:
		return "skipped: no worker without a live box"
	}
	return "ok"
}

// serveSweep hands the sweep its next batch if it asked for one.
func (d *Dispatcher) serveSweep(sr *sweepRun) {
	select {
	case <-sr.ask:
		sr.give <- d.nextBatch(sr)
	default:
	}
}

// nextBatch takes the next SweepBatch workers off the sweep's list, holds
// claims for the quiet ones and returns them (empty when all are busy;
// nil when the list is done).
func (d *Dispatcher) nextBatch(sr *sweepRun) []string {
	if len(sr.todo) == 0 || sr.err != nil {
		return nil
	}
	n := min(SweepBatch, len(sr.todo))
	batch := sr.todo[:n]
	sr.todo = sr.todo[n:]
	quiet, busy := d.quietWorkers(sr.ctx, batch)
	sr.swept = append(sr.swept, quiet...)
	sr.skipped = append(sr.skipped, busy...)
	d.holdForSweep(quiet)
	if quiet == nil {
		quiet = []string{}
	}
	return quiet
}

// quietWorkers splits workers into those with no live box (no claimed
// task, no live supervisor in box.json, no supervisor this dispatcher
// started still running) and the others. A worker whose partition or spec
// cannot be read counts as busy: it is not swept.
func (d *Dispatcher) quietWorkers(ctx context.Context, ws []string) (quiet, busy []string) {
	ours := map[string]bool{}
	d.children.Range(func(_, w any) bool { ours[w.(string)] = true; return true })
	org := d.loadOrg()
	for _, w := range ws {
		live := ours[w] || org == nil
		if !live {
			lb, err := runs.LiveBoxes(d.h.Worker(w))
			live = err != nil || len(lb) > 0
		}
		if !live {
			// The cached spec: tms.Open would read every other spec for its uid check.
			p, _, err := d.open(org, w)
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
	return quiet, busy
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

// WaitDaily waits for daily jobs started by this dispatcher to finish,
// handing the sweep its batches meanwhile (called on the loop's goroutine:
// it stands in for the ticks that would).
func (d *Dispatcher) WaitDaily() {
	done := make(chan struct{})
	go func() { d.dailyBusy.Wait(); close(done) }()
	for {
		d.dailyMu.Lock()
		sr := d.sweep
		d.dailyMu.Unlock()
		var ask chan struct{}
		if sr != nil {
			ask = sr.ask
		}
		select {
		case <-done:
			return
		case <-ask:
			sr.give <- d.nextBatch(sr)
		case <-time.After(50 * time.Millisecond): // a new sweep, or this one ended
		}
	}
}
