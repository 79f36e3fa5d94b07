package dispatch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
)

// OrphanWindow is how far back ReapOrphans looks (by run id, which is the
// run's start): a run older than this whose supervisor died unrecorded was
// seen by an earlier pass.
const OrphanWindow = 7 * 24 * time.Hour

// OrphansEvery is how often the loop looks for orphaned runs (and once at
// its start): they cost no task, only an unrecorded end and maybe a
// leftover container.
const OrphansEvery = 10 * time.Minute

// ReapOrphans finds runs whose supervisor is gone without recording the
// run's end and that no claim refers to any more — a supervisor killed
// after attesting its task (the claim is released there), or an ad-hoc
// run's supervisor killed — and reaps them with `roster-box reap RUN`,
// which destroys a container that outlived it and records the end.
// Claimed tasks' runs are Reclaim's. It returns the runs it reaped. A
// worker whose last pass found every run ended and whose runs/ folder has
// not changed since (no run made or removed) is not read again.
func (d *Dispatcher) ReapOrphans(ctx context.Context) []string {
	org := d.loadOrg()
	if org == nil {
		return nil
	}
	all, served, err := d.workers()
	if err != nil {
		return nil
	}
	now := d.clock.Now()
	var reaped []string
	for _, w := range all {
		if !served[w] {
			continue
		}
		runsID, ok := fsx.StatID(d.h.Worker(w).Runs())
		d.counts.ident.Add(1)
		if last, seen := d.orphans[w]; ok && seen && last.Same(runsID) {
			continue
		}
		delete(d.orphans, w)
		if !ok {
			continue // no runs/ folder: no run to reap
		}
		p, _, err := d.open(org, w)
		if err != nil {
			continue
		}
		ents, err := os.ReadDir(p.W.Runs())
		if err != nil {
			continue
		}
		if len(ents) == 0 {
			d.orphaned(w, runsID)
			continue // nothing in it: the partition need not be read
		}
		d.counts.reclaim.Add(1)
		claimed := map[string]bool{}
		if f, err := p.Read(ctx); err == nil {
			for _, t := range f.Tasks {
				if t.Claim != nil {
					claimed[t.Claim.Run] = true
				}
			}
		} else {
			continue // cannot tell which runs are claimed: leave them all to Reclaim
		}
		allEnded := ok
		for _, e := range ents {
			run := e.Name()
			started, err := home.RunTime(run)
			if err != nil || now.Sub(started) > OrphanWindow {
				continue
			}
			if claimed[run] || d.isOurChild(run) {
				allEnded = false
				continue
			}
			dir := p.W.Run(run)
			info, err := runs.ReadBoxInfo(dir)
			if err != nil || info.Alive() {
				allEnded = allEnded && runs.Finished(dir)
				continue // no box.json: it never started a box; alive: adopted or ad hoc, live
			}
			rec, err := runs.ReadRecord(dir)
			if err != nil || rec.EndedAt != nil {
				allEnded = allEnded && err == nil
				continue
			}
			allEnded = false
			if err := d.reap(ctx, run); err != nil {
				d.log.Error("reap of an orphaned run failed", "worker", w, "run", run, "err", err)
				continue
			}
			d.log.Warn("reaped a run whose supervisor died unrecorded", "worker", w, "run", run)
			reaped = append(reaped, run)
		}
		if allEnded {
			d.orphaned(w, runsID)
		}
	}
	return reaped
}

// orphaned records that worker w's runs/ folder, at runsID, had every run
// ended: it is not read again until the folder changes.
func (d *Dispatcher) orphaned(w string, runsID fsx.FileID) {
	if d.orphans == nil {
		d.orphans = map[string]fsx.FileID{}
	}
	d.orphans[w] = runsID
}

// SweepCgroups runs `roster-box reap --cgroups`: every supervisor exits
// inside its worker's host cgroup, and the sweep removes the ones left
// empty (a live run's, a supervisor in it, is never removed). It runs with
// ReapOrphans, and once more when --until-idle ends with no box live.
func (d *Dispatcher) SweepCgroups(ctx context.Context) {
	prog, err := d.program(d.o.BoxProgram, "roster-box")
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, "reap", "--cgroups", "--home", d.h.Dir)
	cmd.Env = append(os.Environ(), "ROSTER_HOME="+d.h.Dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		d.log.Warn("sweep of empty supervisor cgroups failed", "err", fmt.Sprintf("%v: %s", err, trim(out)))
	}
}
