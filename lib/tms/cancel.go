package tms

import (
	"time"

	"context"
	"fmt"
	"os"

	"github.com/roster-sh/roster/lib/errs"
)

// Cancel ends a task: a pending or needs-review one is canceled; a claimed
// one is recorded canceled under the lock and its run id returned, for the
// caller to kill its box (the supervisor, finding the claim gone, attests
// nothing).
func (p *Partition) Cancel(ctx context.Context, id, why, by string) (run string, err error) {
	t, err := p.begin(ctx)
	if err != nil {
		return "", err
	}
	defer t.end()
	task := t.f.Task(id)
	if task == nil {
		return "", t.notLive(id, "cancel it")
	}
	if task.Claim != nil {
		run = task.Claim.Run
	}
	if by == "" {
		by = ByOwner
	}
	if _, err := t.finish(id, Canceled, EvCanceled, run, by, why, nil); err != nil {
		return "", err
	}
	return run, t.commit()
}

// Requeue puts a claimed task whose box is dead, or a needs-review task,
// back to pending; a finished task is filed again as pending under the
// same id (journal requeued), so the tasks that depend on it wait on it
// again; a task already pending is left as it is (changed false, no
// error). It reaps nothing: the command line uses RequeueReaping.
func (p *Partition) Requeue(ctx context.Context, id, by string) (task Task, changed bool, err error) {
	return p.RequeueReaping(ctx, id, by, nil)
}

// RequeueReaping is Requeue that, for a claimed task whose box is dead and
// whose run folder exists, first calls reap(run) under the partition lock
// (`roster-box reap RUN`: a container can outlive its dead supervisor, and
// the task must never run twice at once). A reap error refuses the
// requeue (exit 13, nothing changes) with a hint to reap by hand. A nil
// reap is not called.
func (p *Partition) RequeueReaping(ctx context.Context, id, by string, reap func(run string) error) (Task, bool, error) {
	if by == "" {
		by = ByOwner
	}
	var task Task
	var changed bool
	err := p.withHistory(func(h *history) error {
		var err error
		task, changed, err = p.requeue(ctx, id, by, reap, h)
		return err
	})
	return task, changed, err
}

// requeue is RequeueReaping's change, under the lock; h is the history,
// or nil until the task is found not live.
func (p *Partition) requeue(ctx context.Context, id, by string, reap func(run string) error, h *history) (Task, bool, error) {
	t, err := p.begin(ctx)
	if err != nil {
		return Task{}, false, err
	}
	defer t.end()
	if err := t.useHistory(h); err != nil {
		return Task{}, false, err
	}
	if task := t.f.Task(id); task != nil {
		switch task.State {
		case Pending:
			return *task, false, nil // nothing to do; never a second copy
		case Claimed:
			if gone, why := p.boxGone(task.Claim, t.now); !gone {
				return Task{}, false, errs.WithHint(conflict("task %s is claimed and %s", id, why),
					"cancel it instead, or wait for its box to end")
			}
		}
		run := ""
		if task.Claim != nil {
			run = task.Claim.Run
		}
		if task.State == Claimed && run != "" && reap != nil {
			if _, err := os.Lstat(p.W.Run(run)); err == nil { // no run folder: no box was ever started
				if err := reap(run); err != nil {
					return Task{}, false, errs.WithHint(conflict("task %s: its box (run %s) is not reaped: %v", id, run, err),
						fmt.Sprintf("run `roster-box reap %s`, then requeue again", run))
				}
			}
		}
		task.State = Pending
		task.Claim = nil
		if _, err := t.emit(Line{Event: EvRequeued, Task: id, Run: run, By: by, Records: []Record{taskRec(*task, false)}}, true); err != nil {
			return Task{}, false, err
		}
		return *task, true, t.commit()
	}
	if t.hist == nil {
		return Task{}, false, errNeedHistory
	}
	// Under the lock: the one line that finished it, no more.
	old, _, ok, err := t.hist.finished(id)
	if err != nil {
		return Task{}, false, err
	}
	if !ok {
		return Task{}, false, notFound("task %s: not found in worker %s", id, p.Name)
	}
	// The same task again, under its id: a new attempt, due now, with
	// its automatic retries afresh. Its earlier attempts stay in the
	// journal (Partition.Attempts).
	task, recs := t.refile(old, nil, 0)
	if _, err := t.emit(Line{Event: EvRequeued, Task: id, By: by, Reason: "was " + old.State, Records: recs}, true); err != nil {
		return Task{}, false, err
	}
	return task, true, t.commit()
}

// refile puts finished task old back into tasks.json as pending under its
// id (a requeue, or an automatic retry): scheduled at at (nil: due now),
// with retried retries used, its reclaim count and gates cleared; its
// dependents wait on it again and forget how it ended. It returns the new
// task and the records of the change, for the caller to journal.
func (t *txn) refile(old Task, at *time.Time, retried int) (Task, []Record) {
	id := old.ID
	task := cloneTask(old)
	task.State = Pending
	task.Claim = nil
	task.FinishedAt = nil
	task.Attempts = 0
	task.Gates = nil
	task.ScheduledAt = at
	task.Retried = retried
	for _, d := range task.DependsOn { // dependencies still live keep it waiting
		if t.f.Task(d) != nil {
			delete(task.Settled, d)
		}
	}
	if len(task.Settled) == 0 {
		task.Settled = nil
	}
	t.f.Tasks = append(t.f.Tasks, task)
	recs := []Record{taskRec(task, false)}
	for k := range t.f.Tasks {
		d := &t.f.Tasks[k]
		if d.ID != id && contains(d.DependsOn, id) && d.Settled[id] != "" {
			delete(d.Settled, id)
			if len(d.Settled) == 0 {
				d.Settled = nil
			}
			recs = append(recs, taskRec(*d, false))
		}
	}
	return task, recs
}
