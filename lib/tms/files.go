package tms

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/roster-sh/roster/lib/fsx"
)

// tasks.json, view/schedule.json and the journal as files: written whole
// and atomically, read and checked (a corrupt one refused).

func (p *Partition) writeViews(f *File, now time.Time) error {
	return p.writeViewsRaw(f, nil, now, nil)
}

// writeViewsRaw writes f, whose tasks are raw's (when raw is not nil):
// tasks.json (sealed, sealed.go) and view/schedule.json. The entries are
// encoded once; each file is its head, then the same bytes. first (if not
// nil) is the journal's append. The work is overlapped so that a change
// waits for the disk about twice, not six times (each fsync may wait for a
// commit of the filesystem's journal, which other workers' writes make
// slow), and never for the freeing of the files it replaces:
//
//   - tasks.json's temporary file is written, then fsynced while
//     schedule.json's is written (one after the other: two 2.3 MB writes
//     at once took 2.6 ms on 2 cores under load, in turn 1.6 ms);
//   - once both are written (a failed write leaves the journal as it was:
//     the change did not happen), the journal's line is appended and
//     fsynced beside the two files' fsyncs;
//   - then tasks.json is renamed into place, then schedule.json, in that
//     order, and each folder is synced as soon as its rename is done.
//
// So the journal line is durable before tasks.json is replaced, and
// tasks.json is replaced before the view (a crash before the folders are
// synced may leave either rename undone, or on a filesystem that does not
// keep renames in order, the view's alone: it is rewritten by the next
// change, and tasks.json is rolled forward from the journal). The files
// replaced are held open across their renames (hold), so that a rename
// does not free a 2 MB file's blocks while the change waits (1-3 ms each,
// more on a filesystem that discards freed blocks at once): they are let
// go beside the folders' fsyncs.
func (p *Partition) writeViewsRaw(f *File, raw *rawFile, now time.Time, first func() error) error {
	f.Format = Format
	var body [][]byte
	if raw != nil {
		var err error
		if body, err = raw.entries(f.Templates); err != nil {
			return fmt.Errorf("encode %s: %w", p.W.TasksFile(), err)
		}
	} else {
		b, err := encodeEntries(0, f)
		if err != nil {
			return fmt.Errorf("encode %s: %w", p.W.TasksFile(), err)
		}
		body = [][]byte{b}
	}
	pieces := append([][]byte{fileHead(f, "", now)}, body...)
	var seal string
	if raw != nil {
		seal = sealOf(pieces, 1+entriesBlock, raw.blockSum())
	} else {
		seal = sealOf(pieces, -1, 0)
	}
	tf, err := writePending(p.W.TasksFile(), 0o600, pieces, seal)
	if err != nil {
		return err
	}
	defer tf.abandon()
	tsync := make(chan error, 1)
	go func() { tsync <- tf.sync() }()
	sf, err := writePending(p.W.Schedule(), 0o644, append([][]byte{fileHead(f, p.Name, now)}, body...), "")
	if err != nil {
		<-tsync
		return err
	}
	defer sf.abandon()
	if err := errors.Join(together(first, sf.sync), <-tsync); err != nil {
		return err
	}
	oldTasks, oldView := hold(p.W.TasksFile()), hold(p.W.Schedule())
	if err := tf.rename(); err != nil {
		oldTasks.release()
		oldView.release()
		return err
	}
	return together(
		func() error { return fsx.SyncDir(p.W.Tasks()) },
		oldTasks.release,
		func() error {
			if err := sf.rename(); err != nil {
				oldView.release()
				return err
			}
			return together(func() error { return fsx.SyncDir(p.W.View()) }, oldView.release)
		})
}

// together runs each fn (nil ones skipped) at once and returns their
// errors joined. The first runs on the calling goroutine: one P fewer is
// needed for them all to be in their system calls at once.
func together(fns ...func() error) error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	own := -1
	for i, fn := range fns {
		switch {
		case fn == nil:
		case own < 0:
			own = i
		default:
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = fn() }()
		}
	}
	if own >= 0 {
		errs[own] = fns[own]()
	}
	wg.Wait()
	return errors.Join(errs...)
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
// backwards from its end, one line at a time: each byte it looks at is read
// twice at most (once to find the line's start, once to decode it), so its
// cost is linear in the lines it reads and does not grow with the
// journal's length (versionless lines are rare and never long runs). A
// long line costs its length, never its square (issue 17: a 41.6 MB line
// held every later action's lock for 20 s).
func tailOf(f *os.File) (seq, ver int64, err error) {
	seq, ver, _, err = tailAt(f)
	return seq, ver, err
}

// tailAt is tailOf that also says where the journal it read ends: its
// size when that is the end of a line (or 0 for an empty journal), else -1
// (a torn tail, or a line being appended).
func tailAt(f *os.File) (seq, ver, size int64, err error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, -1, err
	}
	size = fi.Size()
	if size > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], size-1); err != nil || last[0] != '\n' {
			size = -1
		}
	}
	seq, ver, err = tailBefore(f, fi.Size())
	return seq, ver, size, err
}

// tailBefore is tailOf for the journal's first size bytes.
func tailBefore(f *os.File, size int64) (seq, ver int64, err error) {
	for end := size; end > 0; {
		lineEnd := end
		var last [1]byte
		if _, err := f.ReadAt(last[:], end-1); err != nil && err != io.EOF {
			return 0, 0, err
		}
		if last[0] == '\n' {
			lineEnd = end - 1
		}
		start, err := lineStart(f, lineEnd)
		if err != nil {
			return 0, 0, err
		}
		end = start
		if lineEnd == start {
			continue // an empty line
		}
		line := make([]byte, lineEnd-start)
		if _, err := f.ReadAt(line, start); err != nil && err != io.EOF {
			return 0, 0, err
		}
		l, err := DecodeLine(line)
		if err != nil {
			return 0, 0, refused(f.Name(), "line ending at byte %d: %v", lineEnd, err)
		}
		if seq == 0 {
			seq = l.Seq
		}
		if l.Version > 0 {
			return seq, l.Version, nil
		}
	}
	return seq, 0, nil
}

// lineStart returns the offset just after the last "\n" before end (0 if
// there is none), reading backwards in blocks.
func lineStart(f *os.File, end int64) (int64, error) {
	const block = 16 << 10
	buf := make([]byte, block)
	for off := end; off > 0; {
		n := min(int64(block), off)
		off -= n
		if _, err := f.ReadAt(buf[:n], off); err != nil && err != io.EOF {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return off + int64(i) + 1, nil
		}
	}
	return 0, nil
}
