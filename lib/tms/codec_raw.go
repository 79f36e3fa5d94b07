package tms

import (
	"bytes"
	"fmt"
)

// rawFile is tasks.json's tasks array as read: every task checked exactly
// as decodeFast checks it (or the file sealed by its writer, sealed.go),
// and kept encoded as one block in the writer's form.
type rawFile struct {
	data   []byte
	block  []byte // the tasks as the writer writes them: "\n{...},\n{...}", empty for none
	off    int    // where block starts in data, when it is data's own bytes (a sealed read)
	sum    uint32 // block's CRC-32C, once summed
	summed bool
	n      int             // how many tasks block holds
	idset  map[string]bool // block's ids when it was checked task by task; nil when sealed
	added  []Task          // appended by this change
}

func (d *fdec) rawTasks() bool {
	ids := make(map[string]bool, bytes.Count(d.b, []byte{'\n'}))
	d.skip = true
	defer func() { d.skip = false }()
	var t Task
	var spans [][2]int
	var pre []byte
	ok := d.array(func() bool {
		t = Task{}
		d.ws()
		start := d.i
		if !d.task(&t) || t.ID == "" || ids[t.ID] || badTaskValue(&t) != "" {
			return false // DecodeFile words the refusal
		}
		// Kept only if on one line and starting with its id as the
		// writer writes it (what has, ids and a sealed read rely on);
		// otherwise DecodeFile reads it and the write re-encodes it.
		span := d.b[start:d.i]
		pre = appendStr(append(pre[:0], `{"id":`...), t.ID)
		if bytes.IndexByte(span, '\n') >= 0 || !bytes.HasPrefix(span, pre) {
			return false
		}
		ids[t.ID] = true
		spans = append(spans, [2]int{start, d.i})
		return true
	})
	if ok {
		d.raw.block, d.raw.n, d.raw.idset = joinEntries(d.b, spans), len(spans), ids
	}
	return ok
}

// joinEntries is the entries at spans of b in the writer's form, each on
// its own line: b's own bytes when they already are (the usual case), else
// a copy.
func joinEntries(b []byte, spans [][2]int) []byte {
	if len(spans) == 0 {
		return nil
	}
	contiguous := spans[0][0] > 0 && b[spans[0][0]-1] == '\n'
	for i := 1; contiguous && i < len(spans); i++ {
		contiguous = string(b[spans[i-1][1]:spans[i][0]]) == ",\n"
	}
	if contiguous {
		return b[spans[0][0]-1 : spans[len(spans)-1][1]]
	}
	n := 0
	for _, s := range spans {
		n += s[1] - s[0] + 2
	}
	out := make([]byte, 0, n)
	for i, s := range spans {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, '\n')
		out = append(out, b[s[0]:s[1]]...)
	}
	return out
}

// decodeRaw reads tasks.json as decodeFast and DecodeFile do, keeping the
// tasks encoded. ok=false: the caller must use DecodeFile (which reads the
// file or words its refusal).
func decodeRaw(data []byte) (*rawFile, *File, bool) {
	d := &fdec{b: data, raw: &rawFile{data: data}}
	f, hasFormat, ok := d.file()
	if !ok || !hasFormat || f.Format != Format || f.Version < 0 {
		return nil, nil, false
	}
	if !validTemplates(f.Templates) {
		return nil, nil, false
	}
	return d.raw, f, true
}

// validTemplates tells whether DecodeFile would take the templates: each
// with an id of its own and known values (badTemplateValue), so a raw read
// refuses nothing less than DecodeFile does.
func validTemplates(ts []Template) bool {
	seen := make(map[string]bool, len(ts))
	for i := range ts {
		if id := ts[i].ID; id == "" || seen[id] || badTemplateValue(&ts[i]) != "" {
			return false
		}
		seen[ts[i].ID] = true
	}
	return true
}

// has tells whether the tasks hold id. In the writer's form a task's line
// starts with its id and a comma (text follows), and "\n{" starts nothing
// else (a string's newlines are escaped), so a search for that start is
// exact.
func (r *rawFile) has(id string) bool {
	if r.idset != nil {
		if r.idset[id] {
			return true
		}
	} else if bytes.Contains(r.block, append(appendStr([]byte("\n{\"id\":"), id), ',')) {
		return true
	}
	for i := range r.added {
		if r.added[i].ID == id {
			return true
		}
	}
	return false
}

// task decodes task id (nil if the tasks do not hold it): a copy, which a
// change keeping the tasks encoded may read but not alter. Its line is
// found as has finds it, and decoded alone.
func (r *rawFile) task(id string) *Task {
	for i := range r.added {
		if r.added[i].ID == id {
			t := cloneTask(r.added[i])
			return &t
		}
	}
	i := bytes.Index(r.block, append(appendStr([]byte("\n{\"id\":"), id), ','))
	if i < 0 {
		return nil
	}
	line := r.block[i+1:]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	var t Task
	if d := (&fdec{b: line}); !d.task(&t) || t.ID != id {
		return nil // checked when read: cannot be
	}
	return &t
}

// ids lists the tasks' ids, block's first.
func (r *rawFile) ids() []string {
	out := make([]string, 0, r.n+len(r.added))
	for rest := r.block; len(rest) > 0; {
		line := rest[1:] // after the "\n"
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line, rest = line[:i], line[i:]
		} else {
			rest = nil
		}
		d := &fdec{b: line, i: len(`{"id":`)}
		var id string
		if d.str(&id) {
			out = append(out, id)
		}
	}
	for i := range r.added {
		out = append(out, r.added[i].ID)
	}
	return out
}

// entries is the tasks array's text from its "[" on and the templates
// after it, to the end of the file (the file is its head, then this),
// in pieces, the second of them block itself (entriesBlock).
func (r *rawFile) entries(templates []Template) ([][]byte, error) {
	var b []byte
	var err error
	for i := range r.added {
		if i > 0 || r.n > 0 {
			b = append(b, ',')
		}
		b = append(b, '\n')
		if b, err = appendTask(b, &r.added[i]); err != nil {
			return nil, fmt.Errorf("task %s: %w", r.added[i].ID, err)
		}
	}
	if b, err = appendTemplates(b, templates); err != nil {
		return nil, err
	}
	return [][]byte{[]byte("\n\"tasks\":["), r.block, b}, nil
}

// entriesBlock is the index of block among entries' pieces.
const entriesBlock = 1
