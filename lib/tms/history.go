package tms

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"

	"github.com/roster-sh/roster/lib/fsx"
)

// The history index, tasks/index.jsonl: where in the journal each
// finished task ended and each run of a task ended or was requeued, so
// that finding a finished task (a dependency, show, requeue, a not-live
// error) never reads the whole journal, and never under the partition
// lock (docs/dispatch-and-box.md, Containment: one worker's long journal
// must not hold its lock for seconds).
//
// The index is derived, never the source of truth: a header line
//
//	{"format":1,"seq":S,"off":O,"entries":N,"crc":"HEX"}
//
// says it covers the journal's lines up to seq S, which end at byte O, and
// holds N entry lines whose CRC-32C is HEX; each entry line is
//
//	{"id":ID,"state":"completed","end":[SEQ,OFF],"hist":[[SEQ,OFF],...]}
//
// (state and end only for a finished task; hist, its attempts' lines,
// only if it has any). A reader takes the index, then folds in the
// journal's lines past O (linear in what was appended since); every
// reference it follows is checked against the line it points to (seq),
// and a cursor that no longer ends on line S (the journal was rewritten by
// a forget) makes it fold the whole journal instead, so a stale index
// costs time, never a wrong answer. A change that needs history loads it
// before it takes the lock; under the lock it folds only what was
// appended meanwhile, and reads at most the one line that finished the
// task it needs.
//
// Readers write it back (atomically, under tasks/.index.lock, never
// waiting for that lock) once the lines folded past it outgrow a quarter
// of it, so it is rewritten in amortized constant time per journal byte.
// An index that does not parse, fails its checksum or has an unknown
// format is refused (exit 14) and never overwritten; `roster-task fsck
// --rebuild` rebuilds it from the journal (the journal is the truth).

const indexFormat = 1

// indexEvery is the fewest journal bytes folded past the index that make
// a reader write it again (tests lower it).
var indexEvery int64 = 64 << 10

// history is the index with the journal's later lines folded in.
type history struct {
	p        *Partition
	idx      *indexFile            // nil: none (yet), or set aside as stale
	over     map[string]*histEntry // entries lines past idx changed
	seq, off int64                 // the journal folded: up to seq, ending at byte off
	folded   int64                 // bytes folded past idx
	stale    bool                  // the index on disk was set aside: replace it
}

// errNeedHistory: a change under the lock found it needs the history,
// which is loaded outside the lock (withHistory).
var errNeedHistory = errors.New("tms: this change needs the history index")

// withHistory runs fn without the history; if fn finds it needs it (a
// task that is not live), the history is read with no lock held and fn
// runs again with it.
func (p *Partition) withHistory(fn func(h *history) error) error {
	err := fn(nil)
	if !errors.Is(err, errNeedHistory) {
		return err
	}
	h, err := p.history()
	if err != nil {
		return err
	}
	return fn(h)
}

// history reads the index and the journal past it, and writes the index
// back when enough was folded.
func (p *Partition) history() (*history, error) {
	h := &history{p: p, over: map[string]*histEntry{}}
	idx, err := readIndex(p.W.TasksIndex())
	if err != nil {
		return nil, err
	}
	if idx != nil {
		h.idx, h.seq, h.off = idx, idx.seq, idx.off
	}
	if err := h.catchUp(); err != nil {
		return nil, err
	}
	p.saveIndex(h)
	return h, nil
}

// reset sets the index aside as stale: the whole journal is folded again.
func (h *history) reset() {
	h.idx, h.over, h.seq, h.off, h.folded = nil, map[string]*histEntry{}, 0, 0, 0
	h.stale = true
}

// catchUp folds the journal's complete lines past h.off.
func (h *history) catchUp() error {
	path := h.p.W.Journal()
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		if h.off > 0 {
			h.reset()
		}
		return nil
	}
	if err != nil {
		return refused(path, "cannot read: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if h.off > 0 && !cursorHolds(f, fi.Size(), h.seq, h.off) {
		h.reset()
	}
	data := make([]byte, fi.Size()-h.off)
	if _, err := f.ReadAt(data, h.off); err != nil && err != io.EOF {
		return err
	}
	return h.fold(path, data)
}

// fold folds the journal's text data, which starts at h.off, up to its
// last complete line.
func (h *history) fold(path string, data []byte) error {
	data = data[:bytes.LastIndexByte(data, '\n')+1] // complete lines only
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		raw := data[:i]
		data = data[i+1:]
		off := h.off
		h.off += int64(i + 1)
		h.folded += int64(i + 1)
		if len(raw) == 0 {
			continue
		}
		l, err := DecodeLine(raw)
		if err != nil {
			return refused(path, "line at byte %d: %v", off, err)
		}
		h.apply(l, off)
		h.seq = l.Seq
	}
	return nil
}

// cursorHolds tells whether the journal's line ending at byte off (its
// "\n" at off-1) has seq, as an index covering it says.
func cursorHolds(f *os.File, size, seq, off int64) bool {
	if off > size {
		return false
	}
	var nl [1]byte
	if _, err := f.ReadAt(nl[:], off-1); err != nil || nl[0] != '\n' {
		return false
	}
	l, err := lineAt(f, off-1)
	return err == nil && l.Seq == seq
}

// lineAt decodes the journal line that ends at byte end (its "\n").
func lineAt(f *os.File, end int64) (*Line, error) {
	start, err := lineStart(f, end)
	if err != nil {
		return nil, err
	}
	raw := make([]byte, end-start)
	if _, err := f.ReadAt(raw, start); err != nil && err != io.EOF {
		return nil, err
	}
	return DecodeLine(raw)
}

// entry returns id's entry for a change, made if need be and create.
func (h *history) entry(id string, create bool) *histEntry {
	if e, ok := h.over[id]; ok {
		return e
	}
	var e *histEntry
	if h.idx != nil {
		e = h.idx.find(id)
	}
	if e == nil {
		if !create {
			return nil
		}
		e = &histEntry{ID: id}
	}
	h.over[id] = e
	return e
}

// get returns id's entry as it now is, or nil.
func (h *history) get(id string) *histEntry {
	if e, ok := h.over[id]; ok {
		return e
	}
	if h.idx != nil {
		return h.idx.find(id)
	}
	return nil
}

// apply folds journal line l, at byte off, into h: what finishedWithLines
// and Attempts make of the whole journal.
func (h *history) apply(l *Line, off int64) {
	ref := lineRef{l.Seq, off}
	for _, r := range l.Records {
		switch {
		case r.Task == nil:
		case r.Removed:
			e := h.entry(r.Task.ID, true)
			e.State, e.End = r.Task.State, &ref
		default:
			if e := h.entry(r.Task.ID, false); e != nil && e.State != "" {
				e.State, e.End = "", nil
			}
		}
	}
	if l.Task != "" && attemptEvent(l.Event) {
		e := h.entry(l.Task, true)
		e.Hist = append(e.Hist, ref)
	}
}

// state is how finished task id ended ("" if it is not finished).
func (h *history) state(id string) string {
	if e := h.get(id); e != nil {
		return e.State
	}
	return ""
}

// stateIfAny is state on a nil history too ("").
func (h *history) stateIfAny(id string) string {
	if h == nil {
		return ""
	}
	return h.state(id)
}

// finishedIDs lists every finished task's id.
func (h *history) finishedIDs() []string {
	var out []string
	if h.idx != nil {
		h.idx.each(func(id string, line []byte) {
			if _, ok := h.over[id]; !ok && bytes.Contains(line, []byte(`,"state":`)) {
				out = append(out, id)
			}
		})
	}
	for id, e := range h.over {
		if e.State != "" {
			out = append(out, id)
		}
	}
	return out
}

// errStale: a reference of the index no longer points at its line.
var errStale = errors.New("tms: the history index is stale")

// line reads the journal line r points at, checking it is that line.
func (h *history) line(f *os.File, r lineRef) (*Line, error) {
	end := r[1]
	for buf := make([]byte, 4096); ; {
		n, err := f.ReadAt(buf, end)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			end += int64(i)
			break
		}
		if err != nil {
			return nil, errStale
		}
		end += int64(n)
	}
	raw := make([]byte, end-r[1])
	if _, err := f.ReadAt(raw, r[1]); err != nil && err != io.EOF {
		return nil, err
	}
	l, err := DecodeLine(raw)
	if err != nil || l.Seq != r[0] {
		return nil, errStale
	}
	return l, nil
}

// lines reads the lines refs point at; a stale reference sets the index
// aside and folds the journal again, once, for a fresh answer.
func (h *history) lines(id string, refs func(*histEntry) []lineRef) ([]*Line, error) {
	for try := 0; ; try++ {
		e := h.get(id)
		if e == nil {
			return nil, nil
		}
		out, err := h.readLines(refs(e))
		if !errors.Is(err, errStale) || try > 0 {
			return out, err
		}
		h.reset()
		if err := h.catchUp(); err != nil {
			return nil, err
		}
		h.p.saveIndex(h)
	}
}

func (h *history) readLines(refs []lineRef) ([]*Line, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	f, err := os.Open(h.p.W.Journal())
	if err != nil {
		return nil, errStale
	}
	defer f.Close()
	out := make([]*Line, 0, len(refs))
	for _, r := range refs {
		l, err := h.line(f, r)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// finished returns finished task id as it finished and the line that
// finished it (without its records); ok false if it is not finished.
func (h *history) finished(id string) (Task, *Line, bool, error) {
	ls, err := h.lines(id, func(e *histEntry) []lineRef {
		if e.End == nil {
			return nil
		}
		return []lineRef{*e.End}
	})
	if err != nil || len(ls) == 0 {
		return Task{}, nil, false, err
	}
	l := ls[0]
	var task *Task
	for _, r := range l.Records {
		if r.Task != nil && r.Removed && r.Task.ID == id {
			task = r.Task
		}
	}
	if task == nil {
		return Task{}, nil, false, refused(h.p.W.Journal(), "line %d: finishes no task %s, as the index says", l.Seq, id)
	}
	end := *l
	end.Records = nil
	return *task, &end, true, nil
}

// attempts lists task id's attempts, oldest first.
func (h *history) attempts(id string) ([]Attempt, error) {
	ls, err := h.lines(id, func(e *histEntry) []lineRef { return e.Hist })
	if err != nil {
		return nil, err
	}
	var out []Attempt
	for _, l := range ls {
		if l.Task != id || !attemptEvent(l.Event) {
			continue
		}
		reason := l.Reason
		if reason == "" && l.Evidence != nil {
			reason = l.Evidence.Note
		}
		out = append(out, Attempt{Seq: l.Seq, At: l.At, Event: l.Event, Run: l.Run, By: l.By, Reason: reason})
	}
	return out, nil
}

// encode is the index h makes: the old entries in their order (kept as
// their bytes unless changed), then the new ones by id.
func (h *history) encode() []byte {
	var body []byte
	n := 0
	done := map[string]bool{}
	if h.idx != nil {
		body = make([]byte, 0, len(h.idx.body)+len(h.over)*96)
		h.idx.each(func(id string, line []byte) {
			if e, ok := h.over[id]; ok {
				done[id] = true
				if e.empty() {
					return
				}
				body = appendEntry(body, e)
			} else {
				body = append(body, line...)
			}
			body = append(body, '\n')
			n++
		})
	}
	var ids []string
	for id, e := range h.over {
		if !done[id] && !e.empty() {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		body = append(appendEntry(body, h.over[id]), '\n')
		n++
	}
	head := fmt.Sprintf(`{"format":%d,"seq":%d,"off":%d,"entries":%d,"crc":%q}`+"\n", indexFormat, h.seq, h.off, n, crcText(body))
	return append([]byte(head), body...)
}

// saveIndex writes h as the index when it has outgrown the one on disk,
// unless another process is writing it (never waited for) or has written
// one as new; a refused index is left as it is. Errors only cost the next
// reader a longer fold.
func (p *Partition) saveIndex(h *history) {
	if h.seq == 0 || (h.idx != nil && h.folded < max(indexEvery, int64(len(h.idx.body))/4)) {
		return
	}
	lk, err := fsx.LockPath(context.Background(), p.W.TasksIndexLock(), false, 0)
	if err != nil {
		return
	}
	defer lk.Unlock()
	path := p.W.TasksIndex()
	if cur, err := readIndex(path); err != nil || (cur != nil && cur.seq >= h.seq && !h.stale) {
		return
	}
	data := h.encode()
	if fsx.WriteFile(path, data, 0o600) == nil {
		h.idx = &indexFile{seq: h.seq, off: h.off, body: data[bytes.IndexByte(data, '\n')+1:]}
		h.over, h.folded, h.stale = map[string]*histEntry{}, 0, false
	}
}

// checkIndex is fsck's look at the index: a problem if it cannot be read
// or disagrees with the journal's text data up to its cursor, a note if
// it is stale (the journal was rewritten under it: its next reader sets it
// aside).
func (p *Partition) checkIndex(data []byte) (problem, note string) {
	path := p.W.TasksIndex()
	idx, err := readIndex(path)
	if err != nil {
		return err.Error(), ""
	}
	if idx == nil {
		return "", ""
	}
	if idx.off > int64(len(data)) || (idx.off > 0 && !cursorHoldsIn(data, idx.seq, idx.off)) {
		return "", fmt.Sprintf("%s: stale (the journal changed under it); its next reader folds the journal again", path)
	}
	h := &history{p: p, over: map[string]*histEntry{}}
	if err := h.fold(p.W.Journal(), data[:idx.off]); err != nil {
		return err.Error(), ""
	}
	want := map[string]string{}
	for id, e := range h.over {
		if !e.empty() {
			want[id] = string(appendEntry(nil, e))
		}
	}
	bad := ""
	n := 0
	idx.each(func(id string, line []byte) {
		n++
		if bad == "" && want[id] != string(line) {
			bad = id
		}
	})
	if bad == "" && n != len(want) {
		bad = "(a task missing)"
	}
	if bad != "" {
		return fmt.Sprintf("%s: entry %s differs from the journal (rebuild it: roster-task fsck --rebuild)", path, bad), ""
	}
	return "", ""
}

// cursorHoldsIn is cursorHolds on the journal's text.
func cursorHoldsIn(data []byte, seq, off int64) bool {
	if data[off-1] != '\n' {
		return false
	}
	start := bytes.LastIndexByte(data[:off-1], '\n') + 1
	l, err := DecodeLine(data[start : off-1])
	return err == nil && l.Seq == seq
}

// RebuildIndex writes the history index afresh from the whole journal
// (fsck --rebuild), whatever the index on disk holds.
func (p *Partition) RebuildIndex() error {
	h := &history{p: p, over: map[string]*histEntry{}}
	if err := h.catchUp(); err != nil {
		return err
	}
	lk, err := fsx.LockPath(context.Background(), p.W.TasksIndexLock(), false, fsx.Forever)
	if err != nil {
		return err
	}
	defer lk.Unlock()
	return fsx.WriteFile(p.W.TasksIndex(), h.encode(), 0o600)
}
