package dispatch

import (
	"context"
	"os"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/roster-sh/roster/lib/runs"
)

// Run is the loop: reclaim at start-up, then tick; between ticks sleep
// until the earliest of poll, the next activation or scheduled_at, the
// next reclaim (every 30 s), a change in a watched folder, or a child's
// exit. It returns nil when ctx ends (SIGTERM: stop claiming, leave the
// boxes running), after one tick with Once, and when idle with UntilIdle.
func (d *Dispatcher) Run(ctx context.Context) error {
	began := time.Now()
	var events <-chan fsnotify.Event
	var w *watcher
	if !d.o.NoWatch {
		var err error
		if w, err = newWatcher(d); err != nil {
			d.log.Warn("no change notifications; waking on timers and poll only", "err", err)
		} else {
			defer w.close()
			events = w.events()
			d.watching = true
		}
	}
	d.log.Info("dispatcher started", "home", d.h.Dir, "pid", os.Getpid(), "watch", w != nil)
	ready := false
	d.Reclaim(ctx)
	d.ReapOrphans(ctx)
	d.SweepCgroups(ctx)
	d.retryTakes(ctx)
	lastReclaim, lastOrphans, lastTakes := time.Now(), time.Now(), time.Now()
	for {
		if ctx.Err() != nil {
			d.log.Info("stopping; live boxes keep running")
			return nil
		}
		if w != nil && (d.wsync || time.Since(d.lastFull) >= FullEvery) {
			d.wsync = false
			w.sync()
		}
		rep := d.Tick(ctx)
		if !ready {
			ready = true
			d.log.Info("ready: start-up's reclaim, watches and first look done", "workers", len(d.listed), "seconds", time.Since(began).Seconds())
		}
		if d.childExited.Swap(false) || time.Since(lastReclaim) >= ReclaimEvery {
			d.Reclaim(ctx)
			lastReclaim = time.Now()
		}
		if time.Since(lastOrphans) >= OrphansEvery {
			d.ReapOrphans(ctx)
			d.SweepCgroups(ctx)
			lastOrphans = time.Now()
		}
		if time.Since(lastTakes) >= TakeRetryEvery {
			d.retryTakes(ctx)
			lastTakes = time.Now()
		}
		d.maybeDaily(ctx)
		d.logAdoptedEnds()
		if d.o.Once || (d.o.UntilIdle && rep.Idle() && d.running.Load() == 0 && d.supervisorsLive() == 0) {
			d.WaitDaily()
			d.hooks.Wait()
			d.logAdoptedEnds() // one that ended since this pass's look
			if d.o.UntilIdle {
				d.SweepCgroups(ctx) // every supervisor it started has exited
				d.log.Info("idle: nothing claimable and no box live")
			}
			return nil
		}
		sleep := d.poll()
		if !rep.Next.IsZero() {
			if s := rep.Next.Sub(d.clock.Now()) + 5*time.Millisecond; s < sleep {
				sleep = max(s, 0)
			}
		}
		if s := ReclaimEvery - time.Since(lastReclaim); s < sleep {
			sleep = max(s, 0)
		}
		t := time.NewTimer(sleep)
	wait:
		for {
			select {
			case <-ctx.Done():
			case <-t.C:
			case <-d.kick:
			case ev := <-events:
				if !d.changed(ev.Name) {
					continue // nothing to look at: sleep on
				}
			}
			break wait
		}
		t.Stop()
		d.drain(events)
	}
}

// drain swallows events that arrived together (a rename and a journal
// append are one change; a program making folders for many workers is a
// burst), so one change, or one burst, is one tick: it reads events until
// none came for drainQuiet, for at most drainMost.
func (d *Dispatcher) drain(ch <-chan fsnotify.Event) {
	if ch == nil {
		return
	}
	quiet := time.NewTimer(drainQuiet)
	defer quiet.Stop()
	most := time.NewTimer(drainMost)
	defer most.Stop()
	for {
		select {
		case ev := <-ch:
			d.changed(ev.Name)
			quiet.Reset(drainQuiet) // go ≥ 1.23 timers: no stale tick after Reset
		case <-quiet.C:
			return
		case <-most.C:
			return
		}
	}
}

// The event coalescing of drain.
const (
	drainQuiet = 2 * time.Millisecond
	drainMost  = 50 * time.Millisecond
)

// supervisorsLive counts live supervisors of the served workers (box.json
// naming a running process), adopted ones included. A supervisor outlives
// its task's claim: it attests, then takes the post-run snapshot and
// writes the final run.json. --until-idle returns only when every process
// it started has exited (running: its own supervisors, even one whose
// claim was canceled before it wrote box.json; the reaps and daily jobs
// are waited for where they run) and no adopted supervisor is live, so
// nothing it set going writes into the home after it returns.
func (d *Dispatcher) supervisorsLive() int {
	_, served, err := d.workers()
	if err != nil {
		return 0
	}
	n := 0
	for w := range served {
		live, _ := runs.LiveBoxes(d.h.Worker(w))
		n += len(live)
	}
	return n
}
