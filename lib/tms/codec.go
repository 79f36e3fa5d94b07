package tms

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// A fast path for tasks.json: every command reads the whole file and most
// write it back, so decoding and encoding it dominates their cost once a
// partition holds thousands of tasks (encoding/json spends most of its time
// in reflection and validating the text twice).
//
// decodeFast accepts only the subset of JSON the writer produces (known
// keys spelled exactly, each at most once, no null, integers without
// fraction or exponent) and says ok=false for anything else, which then
// goes to encoding/json. So it never accepts text encoding/json would
// refuse, nor reads text differently: FuzzFastDecode pins both.
// appendTask and appendTemplate write the bytes encoding/json writes (with
// HTML escaping off), pinned by FuzzFastDecode and TestFastEncodeMatchesJSON.
//
// What it buys (2026-12-01, 2 cores, go test -bench 'Add1000$|Add10000|
// Decode10000' ./lib/tms, against a build whose decodeRaw and decodeFast
// always say no and whose appendTask and appendTemplate call
// encoding/json): Add with 1,000 pending tasks 9 ms instead of 28–33 ms,
// with 10,000 pending 41–59 ms instead of 196–460 ms (the targets of
// bench/tasks.sh are 10 ms and 50 ms); decoding a 10,000-task tasks.json
// 7.5 ms instead of 129 ms.

type fdec struct {
	b    []byte
	i    int
	raw  *rawFile // keep tasks encoded
	skip bool     // check strings but do not keep them (a raw task's fields)
}

func (d *fdec) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, or 0 at the end.
func (d *fdec) peek() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *fdec) eat(c byte) bool {
	if d.peek() == c {
		d.i++
		return true
	}
	return false
}

// plainByte: a byte that stands for itself inside a string (printable
// ASCII other than the quote and the backslash).
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// strSpan scans a string token; it returns its contents and whether they
// hold an escape or a non-ASCII byte (which need encoding/json's rules).
func (d *fdec) strSpan() (s []byte, special, ok bool) {
	if !d.eat('"') {
		return nil, false, false
	}
	b, start := d.b, d.i
	for i := start; i < len(b); {
		for i < len(b) && plainByte[b[i]] {
			i++
		}
		if i >= len(b) {
			break
		}
		switch c := b[i]; {
		case c == '"':
			d.i = i + 1
			return b[start:i], special, true
		case c == '\\':
			special = true
			i += 2
		case c < 0x20:
			return nil, false, false
		default: // c >= 0x80
			special = true
			i++
		}
	}
	return nil, false, false
}

func (d *fdec) str(p *string) bool {
	start := d.i
	s, special, ok := d.strSpan()
	if !ok {
		return false
	}
	if !special {
		if !d.skip {
			*p = string(s)
		}
		return true
	}
	if !bytes.Contains(s, []byte{'\\'}) && utf8.Valid(s) {
		if !d.skip {
			*p = string(s)
		}
		return true
	}
	// Escapes or invalid UTF-8: encoding/json's own rules.
	return json.Unmarshal(d.b[start:d.i], p) == nil
}

// enum reads a string field whose values come from a small set (kind,
// standing, state, by): known values are the package's constants, so
// even a skipping (raw) read keeps them, without allocating, for
// badTaskValue to check.
func (d *fdec) enum(p *string) bool {
	start := d.i
	s, special, ok := d.strSpan()
	if !ok {
		return false
	}
	if special {
		d.i = start
		skip := d.skip
		d.skip = false
		ok = d.str(p)
		d.skip = skip
		return ok
	}
	switch string(s) {
	case Pending:
		*p = Pending
	case Claimed:
		*p = Claimed
	case NeedsReview:
		*p = NeedsReview
	case Owner:
		*p = Owner
	case Proactive:
		*p = Proactive
	case KindFiled:
		*p = KindFiled
	case KindRecurring:
		*p = KindRecurring
	case KindRelay:
		*p = KindRelay
	case KindHeartbeat:
		*p = KindHeartbeat
	case KindContinuation:
		*p = KindContinuation
	case ByWorker:
		*p = ByWorker
	case ByHost:
		*p = ByHost
	default:
		*p = string(s)
	}
	return true
}

func (d *fdec) key() ([]byte, bool) {
	s, special, ok := d.strSpan()
	if !ok || special || !d.eat(':') {
		return nil, false
	}
	return s, true
}

func (d *fdec) integer(bits int) (int64, bool) {
	d.ws()
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	digits := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	n := d.i - digits
	if n == 0 || (n > 1 && d.b[digits] == '0') {
		return 0, false
	}
	if d.i < len(d.b) {
		switch d.b[d.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	v, err := strconv.ParseInt(string(d.b[start:d.i]), 10, bits)
	return v, err == nil
}

func (d *fdec) int(p *int) bool {
	v, ok := d.integer(strconv.IntSize)
	*p = int(v)
	return ok
}

func (d *fdec) boolean(p *bool) bool {
	d.ws()
	switch {
	case bytes.HasPrefix(d.b[d.i:], []byte("true")):
		*p = true
		d.i += 4
	case bytes.HasPrefix(d.b[d.i:], []byte("false")):
		*p = false
		d.i += 5
	default:
		return false
	}
	return true
}

func (d *fdec) time(p *time.Time) bool {
	d.ws()
	start := d.i
	if _, special, ok := d.strSpan(); !ok || special {
		return false
	}
	return p.UnmarshalJSON(d.b[start:d.i]) == nil
}

func (d *fdec) timePtr(p **time.Time) bool {
	t := new(time.Time)
	*p = t
	return d.time(t)
}

// object reads an object, calling field for each key; seen refuses a key
// given twice (encoding/json would merge, the fast path does not try).
func (d *fdec) object(field func(k []byte, seen *uint32) bool) bool {
	if !d.eat('{') {
		return false
	}
	if d.eat('}') {
		return true
	}
	var seen uint32
	for {
		k, ok := d.key()
		if !ok || !field(k, &seen) {
			return false
		}
		if d.eat(',') {
			continue
		}
		return d.eat('}')
	}
}

func once(seen *uint32, n uint) bool {
	if *seen&(1<<n) != 0 {
		return false
	}
	*seen |= 1 << n
	return true
}

func (d *fdec) array(elem func() bool) bool {
	if !d.eat('[') {
		return false
	}
	if d.eat(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if d.eat(',') {
			continue
		}
		return d.eat(']')
	}
}

func (d *fdec) strings(p *[]string) bool {
	*p = []string{}
	return d.array(func() bool {
		var s string
		if !d.str(&s) {
			return false
		}
		*p = append(*p, s)
		return true
	})
}

func (d *fdec) stringMap(p *map[string]string) bool {
	m := map[string]string{}
	*p = m
	return d.object(func(k []byte, _ *uint32) bool {
		var v string
		if _, dup := m[string(k)]; dup || !d.str(&v) {
			return false
		}
		m[string(k)] = v
		return true
	})
}

func (d *fdec) claim(p **Claim) bool {
	c := new(Claim)
	*p = c
	return d.object(func(k []byte, seen *uint32) bool {
		switch string(k) {
		case "run":
			return once(seen, 0) && d.str(&c.Run)
		case "at":
			return once(seen, 1) && d.time(&c.At)
		}
		return false
	})
}

func (d *fdec) gate(g *Gate) bool {
	return d.object(func(k []byte, seen *uint32) bool {
		switch string(k) {
		case "id":
			return once(seen, 0) && d.str(&g.ID)
		case "what":
			return once(seen, 1) && d.str(&g.What)
		case "state":
			return once(seen, 2) && d.str(&g.State)
		case "wake":
			return once(seen, 3) && d.boolean(&g.Wake)
		case "why":
			return once(seen, 4) && d.str(&g.Why)
		case "resolved_at":
			return once(seen, 5) && d.timePtr(&g.ResolvedAt)
		case "kind":
			return once(seen, 6) && d.str(&g.Kind)
		case "push":
			g.Push = &RepoPush{}
			return once(seen, 7) && d.repoPush(g.Push)
		}
		return false
	})
}

func (d *fdec) repoPush(p *RepoPush) bool {
	return d.object(func(k []byte, seen *uint32) bool {
		switch string(k) {
		case "repo":
			return once(seen, 0) && d.str(&p.Repo)
		case "ref":
			return once(seen, 1) && d.str(&p.Ref)
		case "old":
			return once(seen, 2) && d.str(&p.Old)
		case "new":
			return once(seen, 3) && d.str(&p.New)
		case "pending":
			return once(seen, 4) && d.str(&p.Pending)
		}
		return false
	})
}

func (d *fdec) task(t *Task) bool {
	return d.object(func(k []byte, seen *uint32) bool {
		switch string(k) {
		case "id":
			skip := d.skip
			d.skip = false
			ok := once(seen, 0) && d.str(&t.ID)
			d.skip = skip
			return ok
		case "text":
			return once(seen, 1) && d.str(&t.Text)
		case "kind":
			return once(seen, 2) && d.enum(&t.Kind)
		case "standing":
			return once(seen, 3) && d.enum(&t.Standing)
		case "state":
			return once(seen, 4) && d.enum(&t.State)
		case "created_at":
			return once(seen, 5) && d.time(&t.CreatedAt)
		case "scheduled_at":
			return once(seen, 6) && d.timePtr(&t.ScheduledAt)
		case "depends_on":
			return once(seen, 7) && d.strings(&t.DependsOn)
		case "settled":
			return once(seen, 8) && d.stringMap(&t.Settled)
		case "ceiling":
			return once(seen, 9) && d.str(&t.Ceiling)
		case "channel":
			return once(seen, 10) && d.str(&t.Channel)
		case "from":
			return once(seen, 11) && d.str(&t.From)
		case "template":
			return once(seen, 12) && d.str(&t.Template)
		case "slot":
			return once(seen, 13) && d.timePtr(&t.Slot)
		case "priority":
			return once(seen, 14) && d.int(&t.Priority)
		case "by":
			return once(seen, 15) && d.enum(&t.By)
		case "attempts":
			return once(seen, 16) && d.int(&t.Attempts)
		case "retries":
			return once(seen, 24) && d.int(&t.Retries)
		case "retried":
			return once(seen, 25) && d.int(&t.Retried)
		case "claim":
			return once(seen, 17) && d.claim(&t.Claim)
		case "gates":
			if !once(seen, 18) {
				return false
			}
			t.Gates = []Gate{}
			return d.array(func() bool {
				t.Gates = append(t.Gates, Gate{})
				return d.gate(&t.Gates[len(t.Gates)-1])
			})
		case "continues":
			return once(seen, 19) && d.str(&t.Continues)
		case "refiled_from":
			return once(seen, 20) && d.str(&t.RefiledFrom)
		case "filed_by":
			return once(seen, 21) && d.str(&t.FiledBy)
		case "last_run":
			return once(seen, 22) && d.str(&t.LastRun)
		case "finished_at":
			return once(seen, 23) && d.timePtr(&t.FinishedAt)
		}
		return false
	})
}

func (d *fdec) template(t *Template) bool {
	return d.object(func(k []byte, seen *uint32) bool {
		switch string(k) {
		case "id":
			return once(seen, 0) && d.str(&t.ID)
		case "system":
			return once(seen, 1) && d.boolean(&t.System)
		case "cron":
			return once(seen, 2) && d.str(&t.Cron)
		case "text":
			return once(seen, 3) && d.str(&t.Text)
		case "standing":
			return once(seen, 4) && d.str(&t.Standing)
		case "by":
			return once(seen, 5) && d.str(&t.By)
		case "window":
			return once(seen, 6) && d.str(&t.Window)
		case "catch_up":
			return once(seen, 7) && d.str(&t.CatchUp)
		case "overlap":
			return once(seen, 8) && d.str(&t.Overlap)
		case "ceiling":
			return once(seen, 9) && d.str(&t.Ceiling)
		case "priority":
			return once(seen, 10) && d.int(&t.Priority)
		case "retries":
			return once(seen, 13) && d.int(&t.Retries)
		case "channel":
			return once(seen, 11) && d.str(&t.Channel)
		case "cursor":
			return once(seen, 12) && d.timePtr(&t.Cursor)
		case "disabled":
			return once(seen, 14) && d.boolean(&t.Disabled)
		case "last":
			return once(seen, 15) && d.templateLast(&t.Last)
		}
		return false
	})
}

func (d *fdec) templateLast(p **TemplateLast) bool {
	l := new(TemplateLast)
	*p = l
	return d.object(func(k []byte, seen *uint32) bool {
		switch string(k) {
		case "task":
			return once(seen, 0) && d.str(&l.Task)
		case "at":
			return once(seen, 1) && d.time(&l.At)
		case "state":
			return once(seen, 2) && d.str(&l.State)
		case "run":
			return once(seen, 3) && d.str(&l.Run)
		}
		return false
	})
}

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

// decodeFast reads a tasks.json the way json.Unmarshal into File would, or
// says ok=false. hasFormat tells whether the "format" key was there.
func decodeFast(data []byte) (f *File, hasFormat, ok bool) {
	return (&fdec{b: data}).file()
}

func (d *fdec) file() (f *File, hasFormat, ok bool) {
	data := d.b
	f = new(File)
	ok = d.object(func(k []byte, seen *uint32) bool {
		switch string(k) {
		case "format":
			hasFormat = true
			return once(seen, 0) && d.int(&f.Format)
		case "version":
			if !once(seen, 1) {
				return false
			}
			v, ok := d.integer(64)
			f.Version = v
			return ok
		case "tasks":
			if !once(seen, 2) {
				return false
			}
			if d.raw != nil {
				return d.rawTasks()
			}
			f.Tasks = make([]Task, 0, bytes.Count(data, []byte{'\n'})) // the writer puts one entry a line
			return d.array(func() bool {
				f.Tasks = append(f.Tasks, Task{})
				return d.task(&f.Tasks[len(f.Tasks)-1])
			})
		case "worker": // schedule.json's; File has no such field
			var w string
			return once(seen, 4) && d.str(&w)
		case "now":
			var t time.Time
			return once(seen, 5) && d.time(&t)
		case "templates":
			if !once(seen, 3) {
				return false
			}
			f.Templates = []Template{}
			return d.array(func() bool {
				f.Templates = append(f.Templates, Template{})
				return d.template(&f.Templates[len(f.Templates)-1])
			})
		}
		return false
	})
	if !ok {
		return nil, false, false
	}
	d.ws()
	if d.i != len(d.b) {
		return nil, false, false
	}
	return f, hasFormat, true
}
