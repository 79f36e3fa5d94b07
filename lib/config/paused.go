package config

import (
	"fmt"
	"os"
	"time"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// SetPaused sets `paused` in worker name's spec, atomically, keeping the rest
// of the file's text as it is: the value of a top-level `paused = ...` is
// replaced in place, or a line is inserted before the first table. A spec
// that does not parse is refused and left untouched.
func SetPaused(h home.Home, name string, paused bool) error {
	w, err := LoadWorker(h, name)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(w.File)
	if err != nil {
		return errs.New(errs.ErrRefused, fmt.Sprintf("%s: cannot read: %v", w.File, unwrapPath(err)))
	}
	fi, err := os.Stat(w.File)
	if err != nil {
		return err
	}
	out := markPausedSince(setTopLevelBool(data, "paused", paused), paused, time.Now())
	again, err := ParseWorker(name, w.File, out)
	if err != nil || again.Paused != paused {
		return errs.New(errs.ErrRefused, fmt.Sprintf("%s: cannot set paused without rewriting the file; edit it by hand", w.File))
	}
	return fsx.WriteFile(w.File, out, fi.Mode().Perm())
}

// sinceRE is the comment SetPaused leaves after `paused = true`: "# since
// TIME" (RFC 3339, UTC), to the end of the line.
var sinceRE = lazyRegexp(`^[ \t]*#[ \t]*since[ \t]+(\S+)[ \t]*(?:\n|$)`)

// topLevelValue finds the value of top-level key in data (which must
// parse): its end offset, and whether it is there. The parser, not a
// pattern, so a multi-line string that holds "paused = true" is not it.
func topLevelValue(data []byte, key string) (end int, ok bool) {
	var p unstable.Parser
	p.Reset(data)
	for p.NextExpression() {
		e := p.Expression()
		if e.Kind == unstable.Table || e.Kind == unstable.ArrayTable {
			return 0, false
		}
		if e.Kind != unstable.KeyValue {
			continue
		}
		it := e.Key()
		it.Next()
		if string(it.Node().Data) == key && it.IsLast() {
			r := e.Value().Raw
			return int(r.Offset + r.Length), true
		}
	}
	return 0, false
}

// markPausedSince writes "# since NOW" after a `paused = true` SetPaused
// set, and takes a stale one off `paused = false`. A comment of the
// operator's own on the line stays as it is, with no mark.
func markPausedSince(data []byte, paused bool, now time.Time) []byte {
	end, ok := topLevelValue(data, "paused")
	if !ok {
		return data
	}
	rest := data[end:]
	if m := sinceRE().FindSubmatchIndex(rest); m != nil {
		nl := ""
		if rest[m[1]-1] == '\n' {
			nl = "\n"
		}
		rest = append([]byte(nl), rest[m[1]:]...)
	} else if len(rest) > 0 && rest[0] != '\n' && rest[0] != '\r' {
		return data // a comment of the operator's own
	}
	out := append([]byte{}, data[:end]...)
	if paused {
		out = append(out, " # since "+now.UTC().Format(time.RFC3339)...)
	}
	return append(out, rest...)
}

// PausedSince is when SetPaused paused the spec data, from the comment it
// left; zero when the spec is not paused or was paused by hand.
func PausedSince(data []byte) time.Time {
	end, ok := topLevelValue(data, "paused")
	if !ok {
		return time.Time{}
	}
	m := sinceRE().FindSubmatch(data[end:])
	if m == nil {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, string(m[1]))
	if err != nil {
		return time.Time{}
	}
	return t
}

// commentedKeyRE is a top-level "# key = true|false" comment line that may
// be brought to life: nothing after the value but blanks or a comment of
// its own, so the line it becomes is valid TOML ("# paused = false 00"
// is prose, not a line to uncomment).
var commentedKeyRE = lazyRegexp(`^#[ \t]*([a-z_]+)[ \t]*=[ \t]*(true|false)[ \t]*(?:#.*)?$`)

// setTopLevelBool returns data with top-level key set to v: the old value's
// bytes replaced, or "key = v" inserted before the first table header (or
// appended when there is none). data must parse.
func setTopLevelBool(data []byte, key string, v bool) []byte {
	val := "false"
	if v {
		val = "true"
	}
	var p unstable.Parser
	p.KeepComments = true
	p.Reset(data)
	insertAt := len(data)
	commented := -1 // a top-level "# key = false" line to bring to life
	var commentedLen int
	for p.NextExpression() {
		e := p.Expression()
		if e.Kind == unstable.Comment && commented < 0 {
			if m := commentedKeyRE().FindSubmatchIndex(e.Data); m != nil && string(e.Data[m[2]:m[3]]) == key {
				off := int(e.Raw.Offset)
				if off == 0 || data[off-1] == '\n' {
					commented, commentedLen = off, m[5] // through the value: the line's own comment stays
				}
			}
			continue
		}
		if e.Kind == unstable.Table || e.Kind == unstable.ArrayTable {
			// The header's line start: the key's offset, back to the newline.
			it := e.Key()
			it.Next()
			off := int(it.Node().Raw.Offset)
			for off > 0 && data[off-1] != '\n' {
				off--
			}
			insertAt = off
			break
		}
		if e.Kind != unstable.KeyValue {
			continue
		}
		it := e.Key()
		it.Next()
		if string(it.Node().Data) == key && it.IsLast() {
			r := e.Value().Raw
			out := append([]byte{}, data[:r.Offset]...)
			out = append(out, val...)
			return append(out, data[r.Offset+r.Length:]...)
		}
	}
	if commented >= 0 {
		out := append([]byte{}, data[:commented]...)
		out = append(out, key+" = "+val...)
		return append(out, data[commented+commentedLen:]...)
	}
	out := append([]byte{}, data[:insertAt]...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	out = append(out, key+" = "+val+"\n"...)
	if insertAt < len(data) {
		out = append(out, '\n')
	}
	return append(out, data[insertAt:]...)
}
