package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/notify"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

// Reclaimed is a claimed task whose box was found dead.
type Reclaimed struct {
	Worker, Task, Run string
	State             string // the task's new state: pending, or failed after the 3rd loss
	Err               error
}

// Reclaim looks at every claimed task of the served workers and applies
// tms.BoxGone: a live box (box.json's supervisor running: pid, start time
// and boot id) is adopted and left alone; a claim younger than
// tms.StartGrace with neither box.json nor a recorded end is left alone
// (its supervisor may still be starting); any other is dead: `roster-box
// reap RUN` (which records the run's end and keeps box.json), then tms
// Reclaim (back to pending, or failed at the third loss) in the same pass.
// A worker the last tick read with no claimed task, and with no change
// since that the tick has not looked at, has nothing to reclaim and is not
// read (the loop reclaims right after a tick; at start-up, before any
// tick, every worker is read).
func (d *Dispatcher) Reclaim(ctx context.Context) []Reclaimed {
	org := d.loadOrg()
	if org == nil {
		return nil
	}
	all, served, err := d.workers()
	if err != nil {
		return nil
	}
	var out []Reclaimed
	for _, w := range all {
		if !served[w] {
			continue
		}
		if ws := d.cache[w]; ws != nil && ws.live == 0 && len(ws.claimed) == 0 && !d.dirty[w] && !d.respec[w] {
			continue
		}
		if !isDir(d.h.Worker(w).Tasks()) {
			continue // nothing was ever filed: nothing claimed (and no folder made for it)
		}
		p, _, err := d.open(org, w)
		if err != nil {
			continue // logged by the tick
		}
		d.counts.reclaim.Add(1)
		f, err := p.Read(ctx)
		if err != nil {
			continue
		}
		now := d.clock.Now()
		for _, t := range f.Tasks {
			if t.State != tms.Claimed || t.Claim == nil {
				continue
			}
			run := t.Claim.Run
			if d.isOurChild(run) {
				continue // we started it and it has not exited
			}
			if gone, _ := tms.BoxGone(p.W.Run(run), t.Claim.At, now); !gone {
				if _, seen := d.adopted.LoadOrStore(run, adoptedRun{w, t.ID}); !seen {
					if _, err := runs.ReadBoxInfo(p.W.Run(run)); err == nil {
						d.log.Info("adopted a live box", "worker", w, "task", t.ID, "run", run)
					} else {
						d.adopted.Delete(run) // still starting: look again next pass
					}
				}
				continue
			}
			_, err := runs.ReadBoxInfo(p.W.Run(run))
			noBox := errors.Is(err, fs.ErrNotExist)
			r := Reclaimed{Worker: w, Task: t.ID, Run: run}
			if rerr := d.reap(ctx, run); rerr != nil {
				if !noBox {
					// A container may have outlived its supervisor: never
					// requeue the task while it could still be running.
					d.log.Error("reap failed; not reclaiming yet", "worker", w, "task", t.ID, "run", run, "err", rerr)
					r.Err = rerr
					out = append(out, r)
					continue
				}
				d.log.Warn("reap failed; the run never started a box", "worker", w, "task", t.ID, "run", run, "err", rerr)
			}
			r.State, r.Err = p.Reclaim(ctx, t.ID, run, "supervisor lost")
			if errors.Is(r.Err, errs.ErrConflict) {
				// The TMS's own check, under the lock, says not now (the claim
				// changed meanwhile): the next pass looks again.
				d.log.Info("reclaim deferred", "worker", w, "task", t.ID, "run", run, "why", r.Err)
			} else if r.Err != nil {
				d.log.Error("reclaim failed", "worker", w, "task", t.ID, "run", run, "err", r.Err)
			} else {
				d.log.Warn("reclaimed a task whose box died", "worker", w, "task", t.ID, "run", run, "now", r.State)
				if r.State == tms.Failed {
					d.notifyFailure(ctx, org, notify.Event{Home: d.h.Dir, Worker: w, Run: run, Task: t.ID,
						Attested: tms.Failed, Ended: "error", Reason: fmt.Sprintf("box lost %d times", tms.MaxReclaims),
						WillRetry: t.Retried < t.Retries})
				}
			}
			out = append(out, r)
		}
	}
	return out
}

// notifyFailure runs the [notify] on_failure hook for a task the
// dispatcher failed itself (its box lost for the last time: no supervisor
// is left to do it), beside the loop, and logs how it went. Every other
// failed run's hook is run by its supervisor (lib/notify).
func (d *Dispatcher) notifyFailure(ctx context.Context, org *config.Org, e notify.Event) {
	if len(org.Notify.OnFailure) == 0 || e.WillRetry && org.Notify.FinalOnly {
		return
	}
	d.hooks.Add(1)
	go func() {
		defer d.hooks.Done()
		n := notify.Run(context.WithoutCancel(ctx), org.Notify.OnFailure, e)
		d.log.Info("on_failure hook ran", "worker", e.Worker, "task", e.Task, "run", e.Run, "exit", n.Exit, "seconds", n.Seconds, "error", n.Error, "output", n.Output)
	}()
}

// adoptedRun is a live box this dispatcher found at a reclaim pass and did
// not start: its end is logged when a later pass finds it finished.
type adoptedRun struct{ worker, task string }

// logAdoptedEnds logs the end of each adopted box whose run has ended
// (a stat per adopted run; the loop calls it every pass).
func (d *Dispatcher) logAdoptedEnds() {
	d.adopted.Range(func(k, v any) bool {
		a := v.(adoptedRun)
		if runs.Finished(d.h.Worker(a.worker).Run(k.(string))) {
			d.adopted.Delete(k)
			d.logRunEnd(a.worker, a.task, k.(string))
		}
		return true
	})
}
