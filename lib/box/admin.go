package box

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
)

// RunRef is a run found in the data tree.
type RunRef struct {
	Worker string
	ID     string
	Dir    string
}

// FindRun resolves a run id prefix across every worker (exit 2 when
// ambiguous, 12 when none).
func FindRun(h home.Home, prefix string) (RunRef, error) {
	workers, err := os.ReadDir(h.DataWorkers())
	if err != nil {
		return RunRef{}, err
	}
	where := map[string]string{}
	var ids []string
	for _, w := range workers {
		if !w.IsDir() || home.ValidWorker(w.Name()) != nil {
			continue
		}
		ents, _ := os.ReadDir(h.Worker(w.Name()).Runs())
		for _, e := range ents {
			if e.IsDir() && home.IsRunID(e.Name()) {
				ids = append(ids, e.Name())
				where[e.Name()] = w.Name()
			}
		}
	}
	id, err := home.Resolve("run", prefix, ids)
	if err != nil {
		return RunRef{}, err
	}
	w := where[id]
	return RunRef{Worker: w, ID: id, Dir: h.Worker(w).Run(id)}, nil
}

// Live lists the live boxes of every worker, oldest first.
func Live(h home.Home) ([]runs.BoxInfo, error) {
	workers, err := os.ReadDir(h.DataWorkers())
	if err != nil {
		return nil, err
	}
	var all []runs.BoxInfo
	for _, w := range workers {
		if !w.IsDir() || home.ValidWorker(w.Name()) != nil {
			continue
		}
		live, err := runs.LiveBoxes(h.Worker(w.Name()))
		if err != nil {
			continue
		}
		all = append(all, live...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Run < all[j].Run })
	return all, nil
}

// The phases of a live supervisor, as `roster-box ps` shows them: only a
// running one has a container.
const (
	PhaseStarting  = "starting"  // no container yet (briefing, mounts, the store lock)
	PhaseRunning   = "running"   // its container is up
	PhaseFinishing = "finishing" // the box has ended: attesting, snapshotting, recording
)

// Phase tells what b's (live) supervisor is doing: running while its
// container is up; finishing once the container is gone and run.json has
// the run's end (written before the post-run snapshot); starting before.
func Phase(h home.Home, b runs.BoxInfo) string {
	if Running(b.Run) {
		return PhaseRunning
	}
	if r, err := runs.ReadRecord(h.Worker(b.Worker).Run(b.Run)); err == nil && r.EndedAt != nil {
		return PhaseFinishing
	}
	return PhaseStarting
}

// Kill asks run's supervisor to end its box now (SIGTERM; the supervisor
// kills the container and records the run as ended "error", note
// "killed"). With wait > 0 it waits that long for the supervisor to exit.
func Kill(r RunRef, wait time.Duration) error {
	b, err := runs.ReadBoxInfo(r.Dir)
	if errors.Is(err, os.ErrNotExist) || (err == nil && !b.Alive()) {
		return errs.New(errs.ErrConflict, fmt.Sprintf("run %s: its box is not live", r.ID))
	}
	if err != nil {
		return err
	}
	if err := unix.Kill(b.PID, unix.SIGTERM); err != nil {
		return fmt.Errorf("run %s: signal supervisor %d: %w", r.ID, b.PID, err)
	}
	// Done when the supervisor has exited (box.json stays: it records who
	// supervised the run).
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !b.Alive() {
			return nil
		}
	}
	return nil
}

// ReapRun cleans up after run's dead supervisor: it destroys a container
// that outlived it and, if run.json has no end, writes one (ended "error",
// note "supervisor lost"). It refuses (exit 13) while the supervisor lives.
// box.json, if any, is left in place.
// It returns whether a container was destroyed and whether the end was
// written.
func ReapRun(r RunRef, now time.Time) (destroyed, recorded bool, err error) {
	if b, err := runs.ReadBoxInfo(r.Dir); err == nil && b.Alive() {
		return false, false, errs.New(errs.ErrConflict, fmt.Sprintf("run %s: its supervisor (pid %d) is alive", r.ID, b.PID))
	}
	destroyed, err = Reap(r.ID)
	if err != nil {
		return destroyed, false, fmt.Errorf("run %s: destroy its box: %w", r.ID, err)
	}
	rec, err := runs.ReadRecord(r.Dir)
	if errors.Is(err, os.ErrNotExist) {
		t, _ := home.RunTime(r.ID)
		rec = &runs.Record{ID: r.ID, Worker: r.Worker, StartedAt: t, Actions: []runs.ActionRecord{}}
		err = nil
	}
	if err != nil {
		return destroyed, false, err
	}
	// The killed supervisor's gateway may have been cut short mid-write:
	// nobody appends to its ledger again, so a torn last line goes now.
	if err := runs.DropTornLedgerTail(r.Dir); err != nil {
		return destroyed, false, fmt.Errorf("run %s: its gateway ledger: %w", r.ID, err)
	}
	if rec.Ended == "" {
		rec.EndedAt = ptr(now.UTC())
		rec.Ended = "error"
		rec.Report.Status = "none"
		if rec.Evidence == nil {
			rec.Evidence = &runs.Evidence{Report: "none"}
		}
		rec.Evidence.Exit = -1 // the supervisor never saw an exit status
		rec.Evidence.Note = joinNote(rec.Evidence.Note, "supervisor lost")
		rec.Cost.WallSeconds = now.Sub(rec.StartedAt).Seconds()
		if rec.Snapshot == "" {
			rec.Snapshot = "not taken: supervisor lost"
		}
		if err := runs.WriteRecord(r.Dir, rec); err != nil {
			return destroyed, false, err
		}
		recorded = true
	}
	// box.json is kept: it names the dead supervisor (never alive again),
	// and with the end recorded the run's claim is reclaimable at once
	// (tms.BoxGone).
	return destroyed, recorded, nil
}
