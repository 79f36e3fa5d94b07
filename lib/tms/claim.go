package tms

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
)

// StartGrace is how young a claim with no box.json yet may be and still
// never be reclaimed or requeued: its supervisor may still be starting.
// A claim whose run.json records the run's end is not protected (BoxGone).
const StartGrace = 30 * time.Second

// BoxGone says whether the box of a claim (the run in runDir, claimed at
// claimedAt) is certainly not running, and if not, why:
//
//   - box.json names a live supervisor (pid, start time and boot id): not
//     gone, whatever run.json says (a supervisor past its run's end is still
//     attesting and taking the post-run snapshot);
//   - box.json names a dead supervisor: gone;
//   - run.json records the run's end (`ended`: the supervisor or the
//     reaper wrote it): gone, whatever the claim's age;
//   - neither, and the claim is younger than StartGrace: not gone (its
//     supervisor may still be starting); older: gone.
//
// box.json is never removed once written (by the supervisor or the
// reaper): it is the run's record of who supervised it, and a stale one
// is harmless because liveness never trusts the file alone.
func BoxGone(runDir string, claimedAt, now time.Time) (bool, string) {
	run := filepath.Base(runDir)
	b, err := runs.ReadBoxInfo(runDir)
	switch {
	case err == nil && b.Alive():
		return false, fmt.Sprintf("its box (run %s, pid %d) is alive", run, b.PID)
	case err == nil:
		return true, ""
	case !errors.Is(err, fs.ErrNotExist):
		return true, "" // unreadable box.json: refused, never trusted as alive
	}
	if r, err := runs.ReadRecord(runDir); err == nil && r.Ended != "" {
		return true, ""
	}
	if now.Sub(claimedAt) < StartGrace {
		return false, fmt.Sprintf("run %s was claimed %s ago and has no box.json yet (its supervisor may still be starting)", run, now.Sub(claimedAt).Round(time.Second))
	}
	return true, ""
}

func (p *Partition) boxGone(c *Claim, now time.Time) (bool, string) {
	return BoxGone(p.W.Run(c.Run), c.At, now)
}

// Claim marks a pending, claimable task claimed for run (journal
// `claimed`). A task that is not pending, or not claimable now, is a
// conflict (exit 13): another dispatcher or a person got there first.
func (p *Partition) Claim(ctx context.Context, id, run string) (Task, error) {
	if !home.IsRunID(run) {
		return Task{}, usage("run id %q: not of the form YYYY-MM-DD-HH-MM-SS-xxxx", run)
	}
	t, err := p.begin(ctx)
	if err != nil {
		return Task{}, err
	}
	defer t.end()
	task := t.f.Task(id)
	if task == nil {
		return Task{}, notFound("task %s: not in worker %s's list", id, p.Name)
	}
	if task.State != Pending {
		return Task{}, conflict("task %s is %s, not pending", id, task.State)
	}
	if e := eligibility(t.f, task, t.now, t.p.Zone()); e.Status != StateDue {
		return Task{}, conflict("task %s is not claimable: %s", id, e.Why)
	}
	task.State = Claimed
	task.Claim = &Claim{Run: run, At: t.now}
	if _, err := t.emit(Line{Event: EvClaimed, Task: id, Run: run, By: ByHost, Records: []Record{taskRec(*task, false)}}, true); err != nil {
		return Task{}, err
	}
	return *task, t.commit()
}

// StillClaimed is the re-check the supervisor makes under the partition
// lock before it starts the container and before it records the outcome:
// does the task's claim still name run? False means the task was canceled
// or reclaimed meanwhile.
func (p *Partition) StillClaimed(ctx context.Context, id, run string) (bool, error) {
	f, err := p.Read(ctx)
	if err != nil {
		return false, err
	}
	return claimedBy(f.Task(id), run), nil
}

// claimedBy tells whether task (nil: none) is claimed by run.
func claimedBy(task *Task, run string) bool {
	return task != nil && task.State == Claimed && task.Claim != nil && task.Claim.Run == run
}

// Attested reports how the host judged a run's task.
const (
	AttestedCompleted   = Completed
	AttestedFailed      = Failed
	AttestedNeedsReview = NeedsReview
	AttestedCanceled    = Canceled
)

// Judge is the host's attestation rule on its own: completed only if the
// command exited 0 (no signal), the box reported complete and no ceiling
// was hit; failed otherwise. It fills in a note for a silent run.
func Judge(ev *runs.Evidence) string {
	ok := ev.Exit == 0 && ev.Signal == "" && !ev.Ceiling && ev.Report == "complete"
	if ok {
		return Completed
	}
	if ev.Report == "" || ev.Report == "none" {
		ev.Report = "none"
		if ev.Note == "" {
			ev.Note = "no report"
			if ev.RefusedActions > 0 {
				ev.Note = fmt.Sprintf("no report after %d refused action(s)", ev.RefusedActions)
			}
		}
		// A worker the gateway blocked, and that gave up without a word,
		// fails with the refusals as its reason (docs/gateway.md).
		if ev.GatewayRefused > 0 && ev.Reason == "" {
			calls := "calls"
			if ev.GatewayRefused == 1 {
				calls = "call"
			}
			ev.Reason = fmt.Sprintf("gateway refused %d %s (%s)", ev.GatewayRefused, calls, ev.GatewayRefusals)
		}
	}
	return Failed
}

// Attest records the host's judgement of run's end on its task, under the
// lock: completed, failed (with ev as the evidence), needs-review (would
// be completed but a gate is still pending) — or canceled, changing
// nothing, when the task's claim no longer names run.
func (p *Partition) Attest(ctx context.Context, id, run string, ev runs.Evidence) (string, error) {
	t, err := p.begin(ctx)
	if err != nil {
		return "", err
	}
	defer t.end()
	task := t.f.Task(id)
	if !claimedBy(task, run) {
		return AttestedCanceled, nil
	}
	verdict := Judge(&ev)
	if verdict == Completed && pendingGates(task) > 0 {
		task.State = NeedsReview
		task.Claim = nil
		task.LastRun = run
		if _, err := t.emit(Line{Event: EvNeedsReview, Task: id, Run: run, By: ByHost, Evidence: &ev, Records: []Record{taskRec(*task, false)}}, true); err != nil {
			return "", err
		}
		return NeedsReview, t.commit()
	}
	event := EvCompleted
	if verdict == Failed {
		event = EvFailed
	}
	fin, err := t.finish(id, verdict, event, run, ByHost, ev.Reason, &ev)
	if err != nil {
		return "", err
	}
	if verdict == Failed {
		if err := p.retry(t, fin, run); err != nil {
			return "", err
		}
	}
	return verdict, t.commit()
}

// retry re-files failed task fin under its id when it has automatic
// retries left (--retries), scheduled after the next wait of [dispatch]
// retry_backoff, and journals it (retrying, "retry N of M at TIME"). The
// failed line before it stays: each attempt is a run attested failed.
func (p *Partition) retry(t *txn, fin Task, run string) error {
	if fin.Retried >= fin.Retries {
		return nil
	}
	n := fin.Retried + 1
	wait := config.DefaultRetryWait(n)
	if p.Org != nil {
		wait = p.Org.RetryWait(n)
	}
	at := t.now.Add(wait).UTC()
	_, recs := t.refile(fin, &at, n)
	_, err := t.emit(Line{Event: EvRetrying, Task: fin.ID, Run: run, By: ByHost,
		Reason: fmt.Sprintf("retry %d of %d at %s (after %s)", n, fin.Retries, at.Format(time.RFC3339), config.FormatDuration(wait)), Records: recs}, true)
	return err
}

// Reclaim handles a claimed task whose box is gone: back to pending with
// attempts + 1 (journal `reclaimed`), or, at the MaxReclaims-th loss,
// failed with evidence "box lost 3 times". It refuses (exit 13) when the
// claim no longer names run, or when its box is not certainly gone
// (BoxGone: alive, or a claim younger than StartGrace with neither
// box.json nor a recorded end). It returns the task's new state.
func (p *Partition) Reclaim(ctx context.Context, id, run, note string) (string, error) {
	t, err := p.begin(ctx)
	if err != nil {
		return "", err
	}
	defer t.end()
	task := t.f.Task(id)
	if !claimedBy(task, run) {
		return "", conflict("task %s is not claimed by run %s", id, run)
	}
	if gone, why := p.boxGone(task.Claim, t.now); !gone {
		return "", conflict("task %s: not reclaimed: %s", id, why)
	}
	task.Attempts++
	if task.Attempts >= MaxReclaims {
		ev := &runs.Evidence{Exit: -1, Report: "none", Note: fmt.Sprintf("box lost %d times", task.Attempts)} // exit -1: no exit status was seen
		if note != "" {
			ev.Reason = note
		}
		fin, err := t.finish(id, Failed, EvFailed, run, ByHost, ev.Note, ev)
		if err != nil {
			return "", err
		}
		if err := p.retry(t, fin, run); err != nil {
			return "", err
		}
		return Failed, t.commit()
	}
	task.State = Pending
	task.Claim = nil
	if _, err := t.emit(Line{Event: EvReclaimed, Task: id, Run: run, By: ByHost, Reason: note, Records: []Record{taskRec(*task, false)}}, true); err != nil {
		return "", err
	}
	return Pending, t.commit()
}

// LiveClaims counts the partition's claimed tasks (the dispatcher's
// per-worker concurrency count, which survives its restarts).
func (p *Partition) LiveClaims(ctx context.Context) (int, error) {
	f, err := p.ReadNoLock(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range f.Tasks {
		if f.Tasks[i].State == Claimed {
			n++
		}
	}
	return n, nil
}
