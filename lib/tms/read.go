package tms

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
)

func usage(format string, args ...any) error {
	return errs.New(errs.ErrUsage, fmt.Sprintf(format, args...))
}

func conflict(format string, args ...any) error {
	return errs.New(errs.ErrConflict, fmt.Sprintf(format, args...))
}

func notFound(format string, args ...any) error {
	return errs.New(errs.ErrNotFound, fmt.Sprintf(format, args...))
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// finishedTasks reads the journal for every task that left tasks.json,
// as it last left it.
func finishedTasks(path string) (map[string]Task, error) {
	out, _, err := finishedWithLines(path)
	return out, err
}

// finishedWithLines is finishedTasks plus, for each finished task, the
// journal line that finished it (without its records).
func finishedWithLines(path string) (map[string]Task, map[string]Line, error) {
	lines, err := readJournal(path, 0)
	if err != nil {
		return nil, nil, err
	}
	out, ends := map[string]Task{}, map[string]Line{}
	for _, l := range lines {
		for _, r := range l.Records {
			if r.Task == nil {
				continue
			}
			if r.Removed {
				out[r.Task.ID] = *r.Task
				e := l
				e.Records = nil
				ends[r.Task.ID] = e
			} else {
				delete(out, r.Task.ID)
				delete(ends, r.Task.ID)
			}
		}
	}
	return out, ends, nil
}

// finish removes task i from the file with its final state, settles its
// dependents and journals the change (one line, one version).
func (t *txn) finish(id, state, event, run, by, reason string, ev *runs.Evidence) (Task, error) {
	i := t.f.taskIndex(id)
	task := cloneTask(t.f.Tasks[i])
	task.State = state
	task.Claim = nil
	if run != "" {
		task.LastRun = run
	}
	now := t.now
	task.FinishedAt = &now
	t.f.Tasks = append(t.f.Tasks[:i], t.f.Tasks[i+1:]...)
	recs := []Record{taskRec(task, true)}
	if k := t.f.templateIndex(task.Template); task.Template != "" && k >= 0 {
		if l := t.f.Templates[k].Last; l != nil && l.Task == id {
			nl := *l
			nl.State, nl.Run = state, task.LastRun
			t.f.Templates[k].Last = &nl
			recs = append(recs, templateRec(t.f.Templates[k], false))
		}
	}
	for k := range t.f.Tasks {
		d := &t.f.Tasks[k]
		if contains(d.DependsOn, id) {
			if d.Settled == nil {
				d.Settled = map[string]string{}
			}
			d.Settled[id] = state
			recs = append(recs, taskRec(*d, false))
		}
	}
	_, err := t.emit(Line{Event: event, Task: id, Run: run, By: by, Reason: reason, Evidence: ev, Records: recs}, true)
	return task, err
}

// Get returns a live task (pending, claimed or needs-review) by exact id.
func (p *Partition) Get(ctx context.Context, id string) (Task, error) {
	f, err := p.Read(ctx)
	if err != nil {
		return Task{}, err
	}
	if task := f.Task(id); task != nil {
		return *task, nil
	}
	return Task{}, notFound("task %s: not in worker %s's list", id, p.Name)
}

// Show returns a task by exact id: a live one from tasks.json, else a
// finished one from the journal (found with the history index, no lock
// held).
func (p *Partition) Show(ctx context.Context, id string) (Task, error) {
	task, _, err := p.ShowEnded(ctx, id)
	return task, err
}

// ShowEnded is Show that, for a finished task, also returns the journal
// line that finished it: its event, who ended it, the reason (a cancel's
// why) and the evidence of the run's end. A live task has no such line
// (nil).
func (p *Partition) ShowEnded(ctx context.Context, id string) (Task, *Line, error) {
	task, err := p.Get(ctx, id)
	if err == nil || !errors.Is(err, errs.ErrNotFound) {
		return task, nil, err
	}
	h, err := p.history()
	if err != nil {
		return Task{}, nil, err
	}
	t, end, ok, err := h.finished(id)
	if err != nil || ok {
		return t, end, err
	}
	return Task{}, nil, notFound("task %s: not found in worker %s", id, p.Name)
}

// ReadFile reads worker w's tasks.json as it is on disk, without the
// partition lock and without rolling it forward from the journal: for a
// listing that writes nothing (worker ls). A missing file is the empty
// partition; an unreadable one is refused (exit 14) as by every reader.
func ReadFile(w home.Worker) (*File, error) { return readFile(w.TasksFile()) }

// Read returns the partition as it is now (rolled forward if need be).
func (p *Partition) Read(ctx context.Context) (*File, error) {
	t, err := p.begin(ctx)
	if err != nil {
		return nil, err
	}
	t.end()
	return t.f, nil
}

// CeilingOf is the wall-clock limit of a run of task: its own ceiling, or
// the org's default for its kind. A ceiling a worker set (a task it filed)
// only ever lowers its kind's (Containment), whatever tasks.json says.
func (p *Partition) CeilingOf(task *Task) time.Duration {
	kind := p.Org.Ceiling(task.Kind)
	if task.Ceiling != "" {
		if d, err := home.ParseDuration(task.Ceiling); err == nil && d > 0 {
			if task.By == ByWorker && kind > 0 && d > kind {
				return kind
			}
			return d
		}
	}
	return kind
}

// RunCeiling is CeilingOf capped, for a proactive task, by what is left of
// the day's proactive box-time budget at now (Containment: the budget is
// not only checked at claim). capped says the budget decided it; a run
// always gets at least a second.
func (p *Partition) RunCeiling(task *Task, now time.Time) (d time.Duration, capped bool) {
	d = p.CeilingOf(task)
	if task.Standing != Proactive {
		return d, false
	}
	b, err := p.BudgetState(now)
	if err != nil || b.Unlimited {
		return d, false
	}
	left := max(b.Limit-b.Used, time.Second)
	if d <= 0 || left < d {
		return left.Truncate(time.Second), true
	}
	return d, false
}

func sortedKeys(m map[string]string) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

// snapshotOf reads tasks.json with no lock held, for a read that changes
// nothing: tasks.json is only ever replaced whole, so it is some version,
// and it is the current one when the journal's last version is the same
// (read after it: a change appends its line first). ok is false when it
// cannot say (a change in flight, a journal ahead, a torn tail, anything
// unreadable): the caller then reads under the lock, which rolls forward,
// repairs or refuses as ever. seq and ver are the journal's. With
// templatesOnly, f's Tasks may be left out (a sealed or well-formed file
// is not decoded task by task). at is where in the journal the snapshot
// stands (ClaimsChanged).
func (p *Partition) snapshotOf(templatesOnly bool) (f *File, seq, ver int64, at Cursor, ok bool) {
	var err error
	if templatesOnly {
		_, f, err = readRaw(p.W.TasksFile())
	} else {
		f, err = readFile(p.W.TasksFile())
	}
	if err != nil {
		return nil, 0, 0, Cursor{}, false
	}
	size := int64(0)
	j, err := os.Open(p.W.Journal())
	if err == nil {
		seq, ver, size, err = tailAt(j)
		j.Close()
	} else if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if err != nil || ver != f.Version {
		return nil, 0, 0, Cursor{}, false
	}
	return f, seq, ver, cursorAt(seq, size), true
}

// ReadNoLock is Read for a reader that changes nothing and must not wait
// on a busy partition (the dispatcher's look at each worker, Due): the
// snapshot when it is current, else Read.
func (p *Partition) ReadNoLock(ctx context.Context) (*File, error) {
	f, _, err := p.readNoLockAt(ctx)
	return f, err
}

// readNoLockAt is ReadNoLock that also says where in the journal the file
// read stands.
func (p *Partition) readNoLockAt(ctx context.Context) (*File, Cursor, error) {
	if f, _, _, at, ok := p.snapshotOf(false); ok {
		return f, at, nil
	}
	t, err := p.begin(ctx)
	if err != nil {
		return nil, Cursor{}, err
	}
	t.end()
	return t.f, t.at, nil
}
