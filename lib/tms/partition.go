package tms

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// Clock tells the time. Every time rule of the TMS asks it, never
// time.Now, so tests can move time at will.
type Clock interface{ Now() time.Time }

// SystemClock is the host's clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Options are what Open needs besides the home and the worker's name. Zero
// values are filled in: the system clock, org.toml and the worker spec
// loaded from the home, os.Getenv.
type Options struct {
	Clock  Clock
	Org    *config.Org
	Worker *config.Worker
	Getenv func(string) string
	// LockWait bounds how long a read or change waits for the partition
	// lock (then errs.ErrBusy); 0 waits until it is granted.
	LockWait time.Duration
}

// Partition is one worker's task partition: tasks/tasks.json,
// tasks/journal.jsonl and view/schedule.json. Every method that reads or
// changes it takes the partition lock (tasks/.lock) for its whole
// read-modify-write; a Partition holds no state between calls, so any
// number of processes may each open the same partition.
type Partition struct {
	Home     home.Home
	Name     string
	W        home.Worker
	Org      *config.Org
	Spec     *config.Worker
	clock    Clock
	getenv   func(string) string
	lockWait time.Duration
}

// WithLockWait returns a copy of p whose reads and changes wait at most d
// for the partition lock (then errs.ErrBusy).
func (p *Partition) WithLockWait(d time.Duration) *Partition {
	c := *p
	c.lockWait = d
	return &c
}

// Open returns worker's partition. The name must be valid (exit 2) and the
// worker must exist (a spec in workers/, else exit 10); its partition need
// not: a missing one is empty at version 0 and is created by the first
// change. Open reads nothing of the partition itself.
func Open(h home.Home, worker string, o Options) (*Partition, error) {
	if err := home.ValidWorker(worker); err != nil {
		return nil, err
	}
	p := &Partition{Home: h, Name: worker, W: h.Worker(worker), Org: o.Org, Spec: o.Worker, clock: o.Clock, getenv: o.Getenv, lockWait: o.LockWait}
	if p.clock == nil {
		p.clock = SystemClock{}
	}
	if p.getenv == nil {
		p.getenv = os.Getenv
	}
	var err error
	if p.Spec == nil {
		if p.Spec, err = config.LoadWorker(h, worker); err != nil {
			return nil, err
		}
	}
	if p.Org == nil {
		if p.Org, err = config.LoadOrg(h); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Now is the partition clock's time.
func (p *Partition) Now() time.Time { return p.clock.Now() }

// Zone is the host zone that cron specs without CRON_TZ, host-local days
// and listed times are read in: the org's (config.Org.Zone), never the
// process's TZ.
func (p *Partition) Zone() *time.Location { return p.Org.Zone() }

// txn is one hold of the partition lock: the current file, the journal's
// last seq and version, and the lines this change will append.
type txn struct {
	p       *Partition
	lk      *fsx.Lock
	j       *os.File
	f       *File
	seq     int64
	ver     int64
	now     time.Time
	out     [][]byte
	changed bool
	raw     *rawFile // tasks.json's tasks still encoded; t.f then has no Tasks
	hist    *history // the history index, read before the lock (withHistory); nil if not
	at      Cursor   // the journal's end as begin found it (after repairing its tail)
}

// refused is exit 14 naming path; a partition's tasks.json or journal
// carries a hint with the way forward.
func refused(path string, format string, args ...any) error {
	err := errs.New(errs.ErrRefused, fmt.Sprintf("%s: %s", path, fmt.Sprintf(format, args...)))
	if h := refusedHint(path); h != "" {
		return errs.WithHint(err, h)
	}
	return err
}

// refusedHint is the way forward from an unreadable partition file:
// tasks.json is the journal's materialized view and can be rebuilt from
// it; the journal is the source of truth, and nothing repairs it
// automatically.
func refusedHint(path string) string {
	w := "WORKER"
	if d := filepath.Dir(filepath.Dir(path)); filepath.Base(filepath.Dir(d)) == "workers" {
		w = filepath.Base(d)
	}
	switch filepath.Base(path) {
	case "tasks.json":
		return fmt.Sprintf("`roster-task fsck %s` shows what is wrong; if the journal is intact, `roster-task fsck --rebuild %s` rebuilds tasks.json from it", w, w)
	case "journal.jsonl":
		return fmt.Sprintf("`roster-task fsck %s` shows what is wrong; the journal is the source of truth and nothing repairs it: fix or truncate the bad line by hand (keep a copy first)", w)
	}
	return ""
}

// begin takes the partition lock, repairs a torn journal tail, reads
// tasks.json and the journal's tail, and rolls tasks.json forward when the
// journal is ahead (a crash between the journal append and the replace).
// A corrupt tasks.json or journal is refused (exit 14) and left untouched.
func (p *Partition) begin(ctx context.Context) (*txn, error) {
	return p.beginRaw(ctx, false)
}

// beginRaw is begin; with raw, tasks.json's tasks are validated as usual
// but kept as their encoded bytes (t.raw) instead of decoded into t.f, for
// a change that only appends a task (Add). It falls back to a decoded
// file (t.raw nil) when tasks.json is not in the writer's form or must be
// rolled forward.
func (p *Partition) beginRaw(ctx context.Context, raw bool) (*txn, error) {
	if err := p.ensureDirs(); err != nil {
		return nil, err
	}
	wait := fsx.Forever
	if p.lockWait > 0 {
		wait = p.lockWait
	}
	lk, err := fsx.LockPath(ctx, p.W.TasksLock(), false, wait)
	if err != nil {
		return nil, err
	}
	t := &txn{p: p, lk: lk, now: p.clock.Now().UTC()}
	ok := false
	defer func() {
		if !ok {
			t.end()
		}
	}()
	// tasks.json is read (and checked) while the journal's tail is found:
	// the two are independent, and both only read. A journal to be made,
	// or whose torn tail must be cut (after a crash), waits for
	// tasks.json, so that a refused tasks.json leaves both as they were.
	type tasksRead struct {
		raw *rawFile
		f   *File
		err error
	}
	got := make(chan tasksRead, 1)
	go func() {
		var r tasksRead
		if raw {
			r.raw, r.f, r.err = readRaw(p.W.TasksFile())
		} else {
			r.f, r.err = readFile(p.W.TasksFile())
		}
		got <- r
	}()
	jt := readTail(p.W.Journal())
	tr := <-got
	t.j = jt.j
	if tr.err != nil {
		return nil, tr.err
	}
	t.raw, t.f = tr.raw, tr.f
	f := t.f
	if jt.again {
		if t.j != nil {
			t.j.Close()
		}
		j, err := os.OpenFile(p.W.Journal(), os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			t.j = nil
			return nil, fmt.Errorf("open %s: %w", p.W.Journal(), err)
		}
		t.j = j
		if _, err := fsx.RepairTail(j); err != nil {
			return nil, err
		}
		if jt.seq, jt.ver, jt.size, jt.err = tailAt(j); jt.err != nil {
			return nil, jt.err
		}
	} else if jt.err != nil {
		return nil, jt.err
	}
	t.seq, t.ver = jt.seq, jt.ver
	size := jt.size
	t.at = cursorAt(t.seq, size)
	switch {
	case t.ver < f.Version:
		return nil, refused(p.W.TasksFile(), "version %d is ahead of the journal's last version %d", f.Version, t.ver)
	case t.ver > f.Version:
		if t.raw != nil {
			if t.f, err = DecodeFile(p.W.TasksFile(), t.raw.data); err != nil {
				return nil, err
			}
			t.raw = nil
		}
		if err := t.rollForward(); err != nil {
			return nil, err
		}
	}
	ok = true
	return t, nil
}

// journalTail is the journal as begin opens it, and its end.
type journalTail struct {
	j              *os.File
	seq, ver, size int64 // tailAt's
	err            error // tailAt's
	again          bool  // missing, unreadable or torn: opened again (made, repaired) once tasks.json is read
}

// readTail opens the journal for a change and finds its end (tailAt),
// reading only: a journal that must first be made or repaired is left to
// begin (again).
func readTail(path string) (jt journalTail) {
	j, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		jt.again = true
		return jt
	}
	jt.j = j
	fi, err := j.Stat()
	if err != nil {
		jt.again = true
		return jt
	}
	if n := fi.Size(); n > 0 {
		var last [1]byte
		if _, err := j.ReadAt(last[:], n-1); err != nil || last[0] != '\n' {
			jt.again = true
			return jt
		}
	}
	jt.seq, jt.ver, jt.size, jt.err = tailAt(j)
	return jt
}

// ensureDirs makes the partition's folders, in order; view/ is the last,
// so once it exists all do (a process that finds only tasks/ may be racing
// the one making them, and makes the rest itself).
func (p *Partition) ensureDirs() error {
	if _, err := os.Stat(p.W.View()); err == nil {
		return nil
	}
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{p.Home.DataWorkers(), 0o700}, {p.W.Dir, 0o700}, {p.W.Tasks(), 0o700}, {p.W.View(), 0o755}} {
		if err := fsx.MkdirDurable(d.path, d.mode); err != nil {
			return fmt.Errorf("create %s: %w", d.path, err)
		}
	}
	return nil
}

// end releases the lock (again: nothing).
func (t *txn) end() {
	if t.j != nil {
		t.j.Close()
		t.j = nil
	}
	if t.lk != nil {
		t.lk.Unlock()
		t.lk = nil
	}
}

// useHistory gives the change h, read before the lock, with the lines
// appended since folded in (only those: no history is read under the lock).
func (t *txn) useHistory(h *history) error {
	if h == nil {
		return nil
	}
	if err := h.catchUp(); err != nil {
		return err
	}
	t.hist = h
	return nil
}

// finishedState is how task id finished ("" if it is not finished), or
// errNeedHistory when the change was begun without the history.
func (t *txn) finishedState(id string) (string, error) {
	if t.hist == nil {
		return "", errNeedHistory
	}
	return t.hist.state(id), nil
}

// rollForward applies the records of every journal line whose version is
// past tasks.json's, then writes tasks.json and the view.
func (t *txn) rollForward() error {
	lines, err := readJournal(t.p.W.Journal(), 0)
	if err != nil {
		return err
	}
	next := t.f.Version + 1
	var last *Line
	for i, l := range lines {
		if l.Version == 0 || l.Version < next {
			continue
		}
		if l.Version != next {
			return refused(t.p.W.Journal(), "line %d: version %d where %d was expected", l.Seq, l.Version, next)
		}
		applyRecords(t.f, l.Records)
		t.f.Version = l.Version
		next++
		last = &lines[i]
	}
	if t.f.Version != t.ver {
		return refused(t.p.W.Journal(), "last version %d not reached by its lines", t.ver)
	}
	if err := t.finishTornGate(last); err != nil {
		return err
	}
	return t.p.writeViews(t.f, t.now)
}

// finishTornGate completes a change a kill tore: a gate resolution that
// left its needs-review task with no pending gate is one change with the
// task's completion (and its continuation), but its lines are appended
// one by one, so a kill between them leaves the resolution alone at the
// journal's end. The rest of that change is made and appended now, under
// the same lock hold, before anything else reads the partition.
func (t *txn) finishTornGate(last *Line) error {
	switch {
	case last == nil:
		return nil
	case last.Event == EvGateResolved:
		task := t.f.Task(last.Task)
		if task == nil || task.State != NeedsReview || pendingGates(task) > 0 {
			return nil
		}
		if _, err := t.completeGated(task.ID, ByOwner); err != nil {
			return err
		}
	case last.Event == EvCompleted && last.Reason == ReasonLastGate:
		// Torn after the completion: the continuation, if a gate woke.
		var orig *Task
		for _, r := range last.Records {
			if r.Task != nil && r.Task.ID == last.Task {
				orig = r.Task
			}
		}
		if orig == nil {
			return nil
		}
		if _, err := t.fileContinuation(cloneTask(*orig)); err != nil {
			return err
		}
	default:
		return nil
	}
	if len(t.out) == 0 {
		return nil
	}
	for _, b := range t.out {
		if err := fsx.AppendLine(t.j, b); err != nil {
			return err
		}
	}
	t.out, t.changed = nil, false
	t.f.Version = t.ver
	return nil
}

// applyRecords makes f hold every record's entry as the record says.
func applyRecords(f *File, recs []Record) {
	for _, r := range recs {
		switch {
		case r.Task != nil:
			i := f.taskIndex(r.Task.ID)
			switch {
			case r.Removed && i >= 0:
				f.Tasks = append(f.Tasks[:i], f.Tasks[i+1:]...)
			case r.Removed:
			case i >= 0:
				f.Tasks[i] = cloneTask(*r.Task)
			default:
				f.Tasks = append(f.Tasks, cloneTask(*r.Task))
			}
		case r.Template != nil:
			i := f.templateIndex(r.Template.ID)
			switch {
			case r.Removed && i >= 0:
				f.Templates = append(f.Templates[:i], f.Templates[i+1:]...)
			case r.Removed:
			case i >= 0:
				f.Templates[i] = *r.Template
			default:
				f.Templates = append(f.Templates, *r.Template)
			}
		}
	}
}

func (f *File) taskIndex(id string) int {
	for i := range f.Tasks {
		if f.Tasks[i].ID == id {
			return i
		}
	}
	return -1
}

func (f *File) templateIndex(id string) int {
	for i := range f.Templates {
		if f.Templates[i].ID == id {
			return i
		}
	}
	return -1
}

// Task returns a pointer to the task id in f, or nil.
func (f *File) Task(id string) *Task {
	if i := f.taskIndex(id); i >= 0 {
		return &f.Tasks[i]
	}
	return nil
}

// Template returns a pointer to template id in f, or nil.
func (f *File) Template(id string) *Template {
	if i := f.templateIndex(id); i >= 0 {
		return &f.Templates[i]
	}
	return nil
}

// cloneTask copies t deeply, so a record never aliases the live file.
func cloneTask(t Task) Task {
	c := t
	c.DependsOn = append([]string(nil), t.DependsOn...)
	if t.Settled != nil {
		c.Settled = make(map[string]string, len(t.Settled))
		for k, v := range t.Settled {
			c.Settled[k] = v
		}
	}
	c.Gates = append([]Gate(nil), t.Gates...)
	if t.Claim != nil {
		cl := *t.Claim
		c.Claim = &cl
	}
	return c
}

func taskRec(t Task, removed bool) Record {
	c := cloneTask(t)
	return Record{Task: &c, Removed: removed}
}

func templateRec(t Template, removed bool) Record {
	c := t
	return Record{Template: &c, Removed: removed}
}

// emit adds a journal line to this change. A line with records (or
// versioned=true) changes the partition and takes the next version; the
// line is marshalled now, so later edits of the file do not alter it.
func (t *txn) emit(l Line, versioned bool) (Line, error) {
	t.seq++
	l.Seq = t.seq
	l.Version = 0
	if versioned {
		t.ver++
		l.Version = t.ver
		t.changed = true
	}
	if l.At.IsZero() {
		l.At = t.now
	}
	b, err := json.Marshal(l)
	if err != nil {
		return l, err
	}
	if len(b) > MaxSetBytes {
		// One line is read whole by every journal reader: bound it, so no
		// change (a set canceling thousands of tasks) makes one too long.
		return l, errs.WithHint(usage("this change would write a journal line of %d bytes, more than the %d MiB limit of one set or line", len(b), MaxSetBytes>>20),
			"change fewer tasks at a time")
	}
	t.out = append(t.out, b)
	return l, nil
}

// commit writes the change in docs/layout.md's order: journal lines appended and
// fsynced, then tasks.json replaced, then view/schedule.json.
func (t *txn) commit() error {
	defer t.end()
	if err := t.syncSpec(); err != nil {
		return err
	}
	appendLines := func() error {
		for _, b := range t.out {
			if err := fsx.AppendLine(t.j, b); err != nil {
				return err
			}
		}
		return nil
	}
	if !t.changed {
		return appendLines()
	}
	t.f.Version = t.ver
	return t.p.writeViewsRaw(t.f, t.raw, t.now, appendLines)
}
