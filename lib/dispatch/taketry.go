package dispatch

import (
	"context"
	"os"
	"os/exec"
	"sort"
	"time"

	"github.com/roster-sh/roster/lib/snap"
)

// TakeRetryEvery is how often the loop retries the take of a worker held
// because its store cannot be snapshotted (tms.StoreHold, snap.Failed),
// and once at its start: a failure that has cleared (space freed, a
// glitch) lifts the hold without waiting for the daily sweep or a take by
// hand.
const TakeRetryEvery = 10 * time.Minute

// retryTakes runs `roster-snap take W --wait 0` for each served worker
// whose last take failed and that has no live box, one after another in
// the background (a take of a large store must not delay the other
// workers' claims); the take's own record is the outcome: a take that
// succeeds removes it, and the next tick claims for the worker again.
func (d *Dispatcher) retryTakes(ctx context.Context) {
	if !d.retrying.CompareAndSwap(false, true) {
		return // the last retry is still under way
	}
	org := d.loadOrg()
	all, served, err := d.workers()
	held := map[string]bool{}
	if org != nil && org.Storage.Snapshots > 0 && err == nil {
		for _, w := range all {
			if f, _ := snap.Failed(ctx, d.h.Worker(w)); served[w] && f != nil {
				held[w] = true
			}
		}
	}
	var failed []string
	if len(held) > 0 {
		ws := make([]string, 0, len(held))
		for w := range held {
			ws = append(ws, w)
		}
		sort.Strings(ws)
		failed, _ = d.quietWorkers(ctx, ws) // only the held: it reads their partitions
	}
	if len(failed) == 0 {
		d.retrying.Store(false)
		return
	}
	prog, err := d.program(d.o.SnapProgram, "roster-snap")
	if err != nil {
		d.logOnce("roster-snap", err)
		d.retrying.Store(false)
		return
	}
	d.dailyBusy.Add(1)
	go func() {
		defer d.dailyBusy.Done()
		defer d.retrying.Store(false)
		for _, w := range failed {
			cmd := exec.CommandContext(ctx, prog, "take", w, "--wait", "0", "--home", d.h.Dir)
			cmd.Env = append(os.Environ(), "ROSTER_HOME="+d.h.Dir)
			if cmd.Run() == nil {
				d.log.Info("snapshot retried: the store can be snapshotted again", "worker", w)
			}
		}
		d.wake()
	}()
}
