package tms

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"strconv"
	"sync"
)

// The history index's file: its entry lines' codec and its parse
// (history.go says what it is for).

// lineRef points at a journal line: its seq and byte offset.
type lineRef [2]int64

// histEntry is one task's entry in the index.
type histEntry struct {
	ID    string
	State string   // completed, failed or canceled; "" while the task is live
	End   *lineRef // the line that finished it
	Hist  []lineRef
}

// attemptEvent tells whether a line with event ev about a task is one of
// its attempts (Partition.Attempts).
func attemptEvent(ev string) bool {
	switch ev {
	case EvCompleted, EvFailed, EvCanceled, EvNeedsReview, EvReclaimed, EvRequeued, EvRetrying:
		return true
	}
	return false
}

func (e *histEntry) empty() bool { return e.State == "" && len(e.Hist) == 0 }

// appendEntry writes e's line (without its newline).
func appendEntry(b []byte, e *histEntry) []byte {
	b = appendStr(append(b, `{"id":`...), e.ID)
	if e.State != "" {
		b = appendStr(append(b, `,"state":`...), e.State)
	}
	if e.End != nil {
		b = appendRef(append(b, `,"end":`...), *e.End)
	}
	if len(e.Hist) > 0 {
		b = append(b, `,"hist":[`...)
		for i, r := range e.Hist {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendRef(b, r)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func appendRef(b []byte, r lineRef) []byte {
	b = strconv.AppendInt(append(b, '['), r[0], 10)
	b = strconv.AppendInt(append(b, ','), r[1], 10)
	return append(b, ']')
}

// decodeEntry reads an entry line exactly as appendEntry writes it.
func decodeEntry(line []byte) (*histEntry, bool) {
	d := &fdec{b: line}
	e := &histEntry{}
	if !d.lit(`{"id":`) || !d.str(&e.ID) || e.ID == "" {
		return nil, false
	}
	if d.lit(`,"state":`) {
		if !d.str(&e.State) || e.State == "" {
			return nil, false
		}
	}
	if d.lit(`,"end":`) {
		var r lineRef
		if !d.ref(&r) {
			return nil, false
		}
		e.End = &r
	}
	if d.lit(`,"hist":[`) {
		for {
			var r lineRef
			if !d.ref(&r) {
				return nil, false
			}
			e.Hist = append(e.Hist, r)
			if !d.lit(",") {
				break
			}
		}
		if !d.lit("]") {
			return nil, false
		}
	}
	if !d.lit("}") || d.i != len(line) || e.empty() || (e.State == "") != (e.End == nil) {
		return nil, false
	}
	return e, true
}

// ref reads [SEQ,OFF]: both positive integers (an offset may be 0).
func (d *fdec) ref(r *lineRef) bool {
	if !d.lit("[") {
		return false
	}
	seq, ok := d.integer(64)
	if !ok || seq <= 0 || !d.lit(",") {
		return false
	}
	off, ok := d.integer(64)
	if !ok || off < 0 || !d.lit("]") {
		return false
	}
	*r = lineRef{seq, off}
	return true
}

// indexHead is the index's first line.
type indexHead struct {
	Format  *int   `json:"format"`
	Seq     int64  `json:"seq"`
	Off     int64  `json:"off"`
	Entries int    `json:"entries"`
	CRC     string `json:"crc"`
}

// indexFile is a parsed index: its head and its entry lines, each checked.
type indexFile struct {
	seq, off int64
	body     []byte // the entry lines, each ending in "\n"
}

// castagnoli is CRC-32C's table, made at its first use: building it is
// 1.5 MB of checksumming, which a process that never reads the index
// (an add without dependencies) does not pay.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

func crcText(b []byte) string {
	return fmt.Sprintf("%08x", crc32.Checksum(b, castagnoli()))
}

// parseIndex reads an index's text; name names it in refusals. Every
// entry line is checked, none kept decoded.
func parseIndex(name string, data []byte) (*indexFile, error) {
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 {
		return nil, refused(name, "no header line")
	}
	var h indexHead
	dec := json.NewDecoder(bytes.NewReader(data[:nl]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil || dec.More() {
		return nil, refused(name, "corrupt header: %v", err)
	}
	switch {
	case h.Format == nil:
		return nil, refused(name, "no \"format\" field")
	case *h.Format != indexFormat:
		return nil, refused(name, "unknown format %d (this build reads format %d)", *h.Format, indexFormat)
	case h.Seq < 0 || h.Off < 0 || h.Entries < 0 || (h.Seq == 0) != (h.Off == 0):
		return nil, refused(name, "header out of range: seq %d, off %d, entries %d", h.Seq, h.Off, h.Entries)
	}
	body := data[nl+1:]
	if crcText(body) != h.CRC {
		return nil, refused(name, "checksum mismatch (damaged or edited)")
	}
	n := 0
	for rest := body; len(rest) > 0; n++ {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return nil, refused(name, "entry %d: no end of line", n+1)
		}
		if _, ok := decodeEntry(rest[:i]); !ok {
			return nil, refused(name, "entry %d: corrupt", n+1)
		}
		rest = rest[i+1:]
	}
	if n != h.Entries {
		return nil, refused(name, "%d entries where the header says %d", n, h.Entries)
	}
	return &indexFile{seq: h.Seq, off: h.Off, body: body}, nil
}

// readIndex reads the index at path; nil if there is none.
func readIndex(path string) (*indexFile, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, refused(path, "cannot read: %v", err)
	}
	return parseIndex(path, data)
}

// find returns id's entry, or nil. An entry's line starts with its id as
// appendStr writes it and a comma (it always has more), and no other text
// of the file does, so a search for that start is exact.
func (x *indexFile) find(id string) *histEntry {
	pat := append(appendStr([]byte("\n{\"id\":"), id), ',')
	i := 0
	if !bytes.HasPrefix(x.body, pat[1:]) {
		if i = bytes.Index(x.body, pat); i < 0 {
			return nil
		}
		i++
	}
	end := i + bytes.IndexByte(x.body[i:], '\n')
	e, _ := decodeEntry(x.body[i:end]) // checked by parseIndex
	return e
}

// each calls fn for every entry line, with its id.
func (x *indexFile) each(fn func(id string, line []byte)) {
	for rest := x.body; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		line := rest[:i]
		d := &fdec{b: line, i: len(`{"id":`)}
		var id string
		d.str(&id)
		fn(id, line)
		rest = rest[i+1:]
	}
}
