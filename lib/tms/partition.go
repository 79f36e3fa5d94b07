package tms

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
}

// Partition is one worker's task partition: tasks/tasks.json,
// tasks/journal.jsonl and view/schedule.json. Every method that reads or
// changes it takes the partition lock (tasks/.lock) for its whole
// read-modify-write; a Partition holds no state between calls, so any
// number of processes may each open the same partition.
type Partition struct {
	Home   home.Home
	Name   string
	W      home.Worker
	Org    *config.Org
	Spec   *config.Worker
	clock  Clock
	getenv func(string) string
}

// Open returns worker's partition. The name must be valid (exit 2) and the
// worker must exist (a spec in workers/, else exit 10); its partition need
// not: a missing one is empty at version 0 and is created by the first
// change. Open reads nothing of the partition itself.
func Open(h home.Home, worker string, o Options) (*Partition, error) {
	if err := home.ValidWorker(worker); err != nil {
		return nil, err
	}
	p := &Partition{Home: h, Name: worker, W: h.Worker(worker), Org: o.Org, Spec: o.Worker, clock: o.Clock, getenv: o.Getenv}
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
	lk, err := fsx.LockPath(ctx, p.W.TasksLock(), false, fsx.Forever)
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
	var f *File
	if raw {
		t.raw, f, err = readRaw(p.W.TasksFile())
	} else {
		f, err = readFile(p.W.TasksFile())
	}
	if err != nil {
		return nil, err
	}
	t.f = f
	j, err := os.OpenFile(p.W.Journal(), os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", p.W.Journal(), err)
	}
	t.j = j
	if _, err := fsx.RepairTail(j); err != nil {
		return nil, err
	}
	t.seq, t.ver, err = tailOf(j)
	if err != nil {
		return nil, err
	}
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

func (p *Partition) ensureDirs() error {
	if _, err := os.Stat(p.W.Tasks()); err == nil {
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

func (t *txn) end() {
	if t.j != nil {
		t.j.Close()
		t.j = nil
	}
	t.lk.Unlock()
}

// rollForward applies the records of every journal line whose version is
// past tasks.json's, then writes tasks.json and the view.
func (t *txn) rollForward() error {
	lines, err := readJournal(t.p.W.Journal(), 0)
	if err != nil {
		return err
	}
	next := t.f.Version + 1
	for _, l := range lines {
		if l.Version == 0 || l.Version < next {
			continue
		}
		if l.Version != next {
			return refused(t.p.W.Journal(), "line %d: version %d where %d was expected", l.Seq, l.Version, next)
		}
		applyRecords(t.f, l.Records)
		t.f.Version = l.Version
		next++
	}
	if t.f.Version != t.ver {
		return refused(t.p.W.Journal(), "last version %d not reached by its lines", t.ver)
	}
	return t.p.writeViews(t.f, t.now)
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
	for _, b := range t.out {
		if err := fsx.AppendLine(t.j, b); err != nil {
			return err
		}
	}
	if !t.changed {
		return nil
	}
	t.f.Version = t.ver
	return t.p.writeViewsRaw(t.f, t.raw, t.now)
}

func (p *Partition) writeViews(f *File, now time.Time) error {
	return p.writeViewsRaw(f, nil, now)
}

// writeViewsRaw writes f, whose tasks are raw's (when raw is not nil).
// The entries are encoded once, after room for a head: each file is its
// head written into that room, then the same bytes.
func (p *Partition) writeViewsRaw(f *File, raw *rawFile, now time.Time) error {
	f.Format = Format
	var buf []byte
	var err error
	if raw != nil {
		buf, err = raw.encodeEntries(headRoom, f.Templates)
	} else {
		buf, err = encodeEntries(headRoom, f)
	}
	if err != nil {
		return fmt.Errorf("encode %s: %w", p.W.TasksFile(), err)
	}
	if err := fsx.WriteFile(p.W.TasksFile(), withHead(buf, fileHead(f, "", now)), 0o600); err != nil {
		return err
	}
	// tasks.json is written: its head's room may now take schedule.json's.
	return fsx.WriteFile(p.W.Schedule(), withHead(buf, fileHead(f, p.Name, now)), 0o644)
}

// headRoom is the room encodeEntries leaves before the entries: enough
// for schedule.json's head (a worker name is at most 63 bytes).
const headRoom = 256

// withHead puts head right before the entries in buf's room.
func withHead(buf, head []byte) []byte {
	if len(head) > headRoom {
		return append(head, buf[headRoom:]...)
	}
	start := headRoom - len(head)
	copy(buf[start:], head)
	return buf[start:]
}

// encodeFile writes tasks.json (worker == "") or schedule.json; nil if an
// entry cannot be encoded (a time outside years 0-9999).
func encodeFile(f *File, worker string, now time.Time) []byte {
	body, err := encodeEntries(0, f)
	if err != nil {
		return nil
	}
	return append(fileHead(f, worker, now), body...)
}

// encodeEntries encodes the tasks and templates arrays once, one entry per
// line (readable by people, cheap to write), for both files, after room
// bytes left for the head.
func encodeEntries(room int, f *File) ([]byte, error) {
	b := make([]byte, room, room+64+len(f.Tasks)*256+len(f.Templates)*256)
	b = append(b, "\n\"tasks\":["...)
	var err error
	for i := range f.Tasks {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '\n')
		if b, err = appendTask(b, &f.Tasks[i]); err != nil {
			return nil, fmt.Errorf("task %s: %w", f.Tasks[i].ID, err)
		}
	}
	return appendTemplates(b, f.Templates)
}

// appendTemplates closes the tasks array and writes the templates and the
// end of the file.
func appendTemplates(b []byte, ts []Template) ([]byte, error) {
	b = append(b, "\n],\n\"templates\":["...)
	var err error
	for i := range ts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '\n')
		if b, err = appendTemplate(b, &ts[i]); err != nil {
			return nil, fmt.Errorf("template %s: %w", ts[i].ID, err)
		}
	}
	return append(b, "\n]}\n"...), nil
}

// fileHead is the start of tasks.json (worker == "") or schedule.json, up
// to the entries.
func fileHead(f *File, worker string, now time.Time) []byte {
	b := make([]byte, 0, 160)
	b = fmt.Appendf(b, "{\"format\":%d,\"version\":%d,", Format, f.Version)
	if worker != "" {
		w, _ := json.Marshal(worker)
		n, _ := json.Marshal(now.UTC())
		b = fmt.Appendf(b, "\"worker\":%s,\"now\":%s,", w, n)
	}
	return b
}

// readFile reads tasks.json; a missing file is the empty partition at
// version 0. Anything else unreadable is refused (exit 14).
func readFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &File{Format: Format}, nil
	}
	if err != nil {
		return nil, refused(path, "cannot read: %v", err)
	}
	return DecodeFile(path, data)
}

// readRaw is readFile keeping the tasks encoded (raw) when the file is in
// the writer's form; otherwise raw is nil and the decoded file is
// returned, or the refusal.
func readRaw(path string) (*rawFile, *File, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &File{Format: Format}, nil
	}
	if err != nil {
		return nil, nil, refused(path, "cannot read: %v", err)
	}
	if r, f, ok := decodeRaw(data); ok {
		return r, f, nil
	}
	f, err := DecodeFile(path, data)
	return nil, f, err
}

// DecodeFile parses the text of a tasks.json (or schedule.json); name
// names it in errors. Unknown formats and corrupt text are refused.
func DecodeFile(name string, data []byte) (*File, error) {
	f, hasFormat, ok := decodeFast(data)
	if !ok || !hasFormat || f.Format != Format {
		var err error
		if f, err = decodeSlow(name, data); err != nil {
			return nil, err
		}
	}
	if f.Version < 0 {
		return nil, refused(name, "negative version %d", f.Version)
	}
	seen := make(map[string]bool, len(f.Tasks))
	for i := range f.Tasks {
		t := &f.Tasks[i]
		if t.ID == "" || seen[t.ID] {
			return nil, refused(name, "task %d: missing or duplicate id %q", i, t.ID)
		}
		if bad := badTaskValue(t); bad != "" {
			return nil, refused(name, "task %s: %s", t.ID, bad)
		}
		seen[t.ID] = true
	}
	seen = map[string]bool{}
	for i := range f.Templates {
		t := &f.Templates[i]
		if t.ID == "" || seen[t.ID] {
			return nil, refused(name, "template %d: missing or duplicate id %q", i, t.ID)
		}
		if bad := badTemplateValue(t); bad != "" {
			return nil, refused(name, "template %s: %s", t.ID, bad)
		}
		seen[t.ID] = true
	}
	return f, nil
}

// badTaskValue names a field of a tasks.json task whose value is none of
// its kind's ("" if all are known): such a task would otherwise vanish
// from every listing.
func badTaskValue(t *Task) string {
	switch t.State {
	case Pending, Claimed, NeedsReview:
	default:
		return fmt.Sprintf("state %q is not pending, claimed or needs-review", t.State)
	}
	switch t.Standing {
	case Owner, Proactive:
	default:
		return fmt.Sprintf("standing %q is not owner or proactive", t.Standing)
	}
	switch t.Kind {
	case KindFiled, KindRecurring, KindRelay, KindHeartbeat, KindContinuation:
	default:
		return fmt.Sprintf("kind %q is not filed, recurring, relay, heartbeat or continuation", t.Kind)
	}
	switch t.By {
	case ByOwner, ByWorker, ByHost:
	default:
		return fmt.Sprintf("by %q is not owner, worker or host", t.By)
	}
	return ""
}

// badTemplateValue is badTaskValue for a template.
func badTemplateValue(t *Template) string {
	switch t.Standing {
	case Owner, Proactive:
	default:
		return fmt.Sprintf("standing %q is not owner or proactive", t.Standing)
	}
	return ""
}

// decodeSlow is DecodeFile's encoding/json path, which also words every
// refusal.
func decodeSlow(name string, data []byte) (*File, error) {
	var head struct {
		Format *int `json:"format"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, refused(name, "corrupt: %v", err)
	}
	if head.Format == nil {
		return nil, refused(name, "no \"format\" field")
	}
	if *head.Format != Format {
		return nil, refused(name, "unknown format %d (this build reads format %d)", *head.Format, Format)
	}
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, refused(name, "corrupt: %v", err)
	}
	return &f, nil
}

// DecodeLine parses one journal line.
func DecodeLine(data []byte) (*Line, error) {
	var l Line
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, err
	}
	if l.Seq <= 0 {
		return nil, fmt.Errorf("no seq")
	}
	if l.Version < 0 {
		return nil, fmt.Errorf("negative version")
	}
	if l.Event == "" {
		return nil, fmt.Errorf("no event")
	}
	return &l, nil
}

// readJournal reads every complete line with seq > since (a torn last line
// is ignored; any other unparsable line is refused).
func readJournal(path string, since int64) ([]Line, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, refused(path, "cannot read: %v", err)
	}
	var out []Line
	for i, raw := range fsx.SplitLines(data) {
		l, err := DecodeLine(raw)
		if err != nil {
			return nil, refused(path, "line %d: %v", i+1, err)
		}
		if l.Seq > since {
			out = append(out, *l)
		}
	}
	return out, nil
}

// tailOf finds the journal's last seq and last version by reading
// backwards from its end: its cost does not grow with the journal's length
// (versionless lines are rare and never long runs).
func tailOf(f *os.File) (seq, ver int64, err error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	end := fi.Size()
	const block = 16 << 10
	var carry []byte // the start of a line whose beginning is further back
	for off := end; off > 0 || len(carry) > 0; {
		n := int64(block)
		if off < n {
			n = off
		}
		off -= n
		buf := make([]byte, n, int(n)+len(carry))
		if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
			return 0, 0, err
		}
		buf = append(buf, carry...)
		// Split: everything after the first newline is whole lines (unless
		// off == 0, where the whole buffer is).
		start := 0
		if off > 0 {
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				carry = buf
				continue
			}
			start = i + 1
			carry = buf[:start]
		} else {
			carry = nil
		}
		lines := bytes.Split(bytes.TrimSuffix(buf[start:], []byte("\n")), []byte("\n"))
		for k := len(lines) - 1; k >= 0; k-- {
			if len(lines[k]) == 0 {
				continue
			}
			l, err := DecodeLine(lines[k])
			if err != nil {
				return 0, 0, refused(f.Name(), "line ending at byte %d: %v", off, err)
			}
			if seq == 0 {
				seq = l.Seq
			}
			if l.Version > 0 {
				return seq, l.Version, nil
			}
		}
		if off == 0 {
			break
		}
		// carry still holds the partial first line plus its newline; keep
		// only the partial part for the next block.
		carry = bytes.TrimSuffix(carry, []byte("\n"))
		if len(carry) == 0 {
			carry = nil
		}
	}
	return seq, 0, nil
}
