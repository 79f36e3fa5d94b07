package dispatch

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/tms"
)

// Start is one claim the dispatcher made and the box it started for it.
type Start struct {
	Worker, Task, Run string
	Err               error // the box could not be started (the claim is reclaimed later)
}

// TickReport is what one tick did and saw.
type TickReport struct {
	Started []Start
	Waiting int       // claimable tasks left unclaimed (cap or concurrency full)
	Live    int       // claimed tasks (live boxes) across all workers after the tick
	Held    string    // why dispatch holds, "" when it does not
	Next    time.Time // the earliest future template activation or scheduled_at
}

// Idle reports whether nothing is claimable now and no box is live.
func (r *TickReport) Idle() bool { return r.Waiting == 0 && r.Live == 0 && len(r.Started) == 0 }

type workerState struct {
	name string
	p    *tms.Partition
	spec *config.Worker
	due  []tms.Task
	live int
}

// Tick runs one round: for each served worker (paused and unreadable ones
// skipped), keep the heartbeat in step and fire due activations, read the
// claimable tasks; then, unless a hold is on, claim round-robin across
// workers up to the cap and each worker's concurrency, and start a box per
// claim.
func (d *Dispatcher) Tick(ctx context.Context) *TickReport {
	rep := &TickReport{}
	org := d.loadOrg()
	if org == nil {
		return rep
	}
	all, served, err := d.workers()
	if err != nil {
		d.logOnce("workers/", err)
		return rep
	}
	d.clearBad("workers/")

	var ready []*workerState
	total := 0
	for _, w := range all {
		p, spec, err := d.open(org, w)
		if err != nil {
			if served[w] {
				d.logOnce(w, err)
			}
			continue
		}
		if !served[w] || spec.Paused {
			// Not ours to claim for, but its boxes count against the cap.
			if n, err := p.LiveClaims(ctx); err == nil {
				total += n
			}
			continue
		}
		if _, err := p.FireTemplates(ctx); err != nil {
			if ctx.Err() != nil {
				return rep
			}
			d.logOnce(w, err)
			continue
		}
		due, err := p.Due(ctx)
		if err != nil {
			d.logOnce(w, err)
			continue
		}
		d.clearBad(w)
		total += due.LiveClaims
		if !due.Next.IsZero() && (rep.Next.IsZero() || due.Next.Before(rep.Next)) {
			rep.Next = due.Next
		}
		ready = append(ready, &workerState{name: w, p: p, spec: spec, due: due.Claimable, live: due.LiveClaims})
	}

	rep.Held = d.checkHolds(org)
	if rep.Held == "" && len(ready) > 0 {
		rep.Started = d.claimRoundRobin(ctx, ready, d.cap(org)-total)
		total += len(rep.Started)
	}
	if rep.Held == "" {
		for _, ws := range ready {
			rep.Waiting += len(ws.due) // left for a later tick: cap or concurrency full
		}
	}
	rep.Live = total
	return rep
}

// claimRoundRobin claims one task per worker in turn, starting one worker
// further each tick, until the cap (avail) or every worker's concurrency or
// due list runs out.
func (d *Dispatcher) claimRoundRobin(ctx context.Context, ready []*workerState, avail int) []Start {
	var out []Start
	n := len(ready)
	start := d.rr % n
	d.rr++
	for progress := true; progress && avail > 0; {
		progress = false
		for i := 0; i < n && avail > 0; i++ {
			ws := ready[(start+i)%n]
			for len(ws.due) > 0 && ws.live < max(ws.spec.Concurrency, 1) {
				task := ws.due[0]
				ws.due = ws.due[1:]
				run := home.NewRunID(d.clock.Now())
				if _, err := ws.p.Claim(ctx, task.ID, run); err != nil {
					if errors.Is(err, errs.ErrConflict) || errors.Is(err, errs.ErrNotFound) {
						continue // someone else got there first, or it changed: next one
					}
					d.log.Error("claim failed", "worker", ws.name, "task", task.ID, "err", err)
					break
				}
				ws.live++
				avail--
				progress = true
				s := Start{Worker: ws.name, Task: task.ID, Run: run}
				if s.Err = d.startBox(ws.name, task.ID, run); s.Err != nil {
					d.log.Error("box not started; the claim is reclaimed within a minute", "worker", ws.name, "task", task.ID, "run", run, "err", s.Err)
				} else {
					d.log.Info("claimed", "worker", ws.name, "task", task.ID, "run", run)
				}
				out = append(out, s)
				break // one per worker per turn: round-robin
			}
		}
	}
	return out
}

// checkHolds evaluates the credential and low-disk holds, logging each
// when it starts and when it ends.
func (d *Dispatcher) checkHolds(org *config.Org) string {
	var why []string
	if !tms.CredentialsPresent(org, d.getenv) {
		why = append(why, "no model credential present (org.toml [dispatch] credentials: "+strings.Join(org.Dispatch.Credentials, ", ")+")")
	}
	if low, reason, err := tms.LowDisk(d.h, org); err == nil && low {
		why = append(why, reason)
	}
	held := strings.Join(why, "; ")
	switch {
	case held == d.held:
	case held == "":
		d.log.Info("dispatch hold ended", "was", d.held)
	case d.held == "":
		d.log.Warn("dispatch held: claiming nothing", "why", held)
	default:
		d.log.Warn("dispatch still held, for another reason", "why", held)
	}
	d.held = held
	return held
}
