package tms

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/roster-sh/roster/lib/fsx"
)

// FsckReport lists what is wrong with a partition (nothing: clean).
type FsckReport struct {
	Worker   string
	Version  int64
	Lines    int
	Problems []string
	Notes    []string // harmless: a torn last line, a journal ahead of tasks.json
	// BadLine is the journal's first unparsable line (1-based; 0: none):
	// the journal itself is corrupt, which only a person can repair.
	BadLine int
	// JournalProblem: some problem is in the journal itself, so rebuilding
	// tasks.json from it is no way forward.
	JournalProblem bool
}

// Clean reports whether fsck found no problem.
func (r *FsckReport) Clean() bool { return len(r.Problems) == 0 }

// Fsck verifies the partition under its lock, changing nothing: tasks.json
// parses; the journal parses (but for a torn last line) with seq 1, 2, 3...
// and versions 1, 2, 3... on its versioned lines; replaying the journal's
// records gives tasks.json (or is ahead of it: a crash before the replace,
// which the next writer rolls forward); every claimed task has a claim
// (one without a run folder is a note: its box never started, and a
// dispatcher reclaims it); every dependency exists.
func (p *Partition) Fsck(ctx context.Context) (*FsckReport, error) {
	if err := p.ensureDirs(); err != nil {
		return nil, err
	}
	lk, err := fsx.LockPath(ctx, p.W.TasksLock(), false, fsx.Forever)
	if err != nil {
		return nil, err
	}
	defer lk.Unlock()
	r := &FsckReport{Worker: p.Name}
	bad := func(format string, args ...any) { r.Problems = append(r.Problems, fmt.Sprintf(format, args...)) }
	f, ferr := readFile(p.W.TasksFile())
	if ferr != nil {
		bad("%v", ferr)
	} else {
		r.Version = f.Version
	}
	data, err := os.ReadFile(p.W.Journal())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		bad("%s: cannot read: %v", p.W.Journal(), err)
		r.JournalProblem = true
		return r, nil
	}
	if n := len(data); n > 0 && data[n-1] != '\n' {
		r.Notes = append(r.Notes, fmt.Sprintf("%s: torn last line (%d bytes); the next writer truncates it", p.W.Journal(), n-1-bytes.LastIndexByte(data, '\n')))
	}
	replay := &File{Format: Format}
	var seq int64
	for i, raw := range fsx.SplitLines(data) {
		l, err := DecodeLine(raw)
		if err != nil {
			bad("%s: line %d: %v", p.W.Journal(), i+1, err)
			r.BadLine, r.JournalProblem = i+1, true
			return r, nil
		}
		r.Lines++
		if l.Seq != seq+1 {
			bad("%s: line %d: seq %d where %d was expected", p.W.Journal(), i+1, l.Seq, seq+1)
			r.JournalProblem = true
		}
		seq = l.Seq
		if l.Version != 0 {
			if l.Version != replay.Version+1 {
				bad("%s: line %d: version %d where %d was expected", p.W.Journal(), i+1, l.Version, replay.Version+1)
				r.JournalProblem = true
			}
			applyRecords(replay, l.Records)
			replay.Version = l.Version
		} else if len(l.Records) > 0 {
			bad("%s: line %d: records on a line without a version", p.W.Journal(), i+1)
			r.JournalProblem = true
		}
	}
	if problem, note := p.checkIndex(data); problem != "" {
		bad("%s", problem)
	} else if note != "" {
		r.Notes = append(r.Notes, note)
	}
	if f == nil {
		return r, nil
	}
	switch {
	case replay.Version > f.Version:
		r.Notes = append(r.Notes, fmt.Sprintf("journal is at version %d, tasks.json at %d: the next writer rolls it forward", replay.Version, f.Version))
	case replay.Version < f.Version:
		bad("%s: version %d is ahead of the journal's %d", p.W.TasksFile(), f.Version, replay.Version)
	default:
		if d := diffFiles(replay, f); d != "" {
			bad("%s differs from the journal's records: %s", p.W.TasksFile(), d)
		}
	}
	for i := range f.Tasks {
		t := &f.Tasks[i]
		if t.State == Claimed {
			if t.Claim == nil {
				bad("task %s: claimed without a claim", t.ID)
			} else if fi, err := os.Stat(p.W.Run(t.Claim.Run)); err != nil || !fi.IsDir() {
				// A dispatcher claims, then starts the box, which makes the
				// folder: killed between, the claim has none, and the next
				// dispatcher's tick reclaims it once the start grace has
				// passed. The partition itself is whole.
				r.Notes = append(r.Notes, fmt.Sprintf("task %s: claimed by run %s, which has no run folder (its box never started); a dispatcher reclaims it %s after the claim",
					t.ID, t.Claim.Run, StartGrace))
			}
		}
		for _, d := range t.DependsOn {
			if f.Task(d) == nil && t.Settled[d] == "" {
				bad("task %s: dependency %s does not exist", t.ID, d)
			}
		}
	}
	return r, nil
}

// diffFiles says how two partitions differ (entry order aside), or "".
func diffFiles(a, b *File) string {
	if d := diffByID("task", a.Tasks, b.Tasks, func(t *Task) string { return t.ID }); d != "" {
		return d
	}
	return diffByID("template", a.Templates, b.Templates, func(t *Template) string { return t.ID })
}

// diffByID compares two lists of entries by id and encoded content.
func diffByID[T any](what string, a, b []T, id func(*T) string) string {
	enc := func(v *T) string { x, _ := json.Marshal(v); return string(x) }
	bm := make(map[string]string, len(b))
	for i := range b {
		bm[id(&b[i])] = enc(&b[i])
	}
	for i := range a {
		k := id(&a[i])
		w, ok := bm[k]
		switch {
		case !ok:
			return what + " " + k + " missing"
		case w != enc(&a[i]):
			return what + " " + k + " differs"
		}
		delete(bm, k)
	}
	for k := range bm {
		return what + " " + k + " not in the journal"
	}
	return ""
}

// Rebuild rewrites tasks.json (and the view) from the journal's records
// alone, under the lock, and then the history index (history.go): the
// journal is the source of truth. A journal
// that does not parse is refused (exit 14) and nothing is written.
func (p *Partition) Rebuild(ctx context.Context) (int64, error) {
	if err := p.ensureDirs(); err != nil {
		return 0, err
	}
	lk, err := fsx.LockPath(ctx, p.W.TasksLock(), false, fsx.Forever)
	if err != nil {
		return 0, err
	}
	defer lk.Unlock()
	lines, err := readJournal(p.W.Journal(), 0)
	if err != nil {
		return 0, err
	}
	f := &File{Format: Format}
	for _, l := range lines {
		if l.Version == 0 {
			continue
		}
		if l.Version != f.Version+1 {
			return 0, refused(p.W.Journal(), "line %d: version %d where %d was expected", l.Seq, l.Version, f.Version+1)
		}
		applyRecords(f, l.Records)
		f.Version = l.Version
	}
	if err := p.writeViews(f, p.clock.Now()); err != nil {
		return 0, err
	}
	return f.Version, p.RebuildIndex()
}

// Journal returns the journal's complete lines with seq > since.
func (p *Partition) Journal(since int64) ([]Line, error) {
	return readJournal(p.W.Journal(), since)
}
