package snap

import (
	"bytes"
	"math"
	"unicode/utf8"
)

// parseCanonical decodes a manifest line written exactly as AppendEntry
// writes it (its keys in its order, no spaces, plain strings), which is
// every line of a manifest this package made: a take parses 100,000 of
// them before it can compare anything, and the general parser's cost was
// most of that. Any other line, valid or not, gives ok false and is left
// to the general parser (ParseEntry), which alone decides errors; on the
// lines it takes, parseCanonical gives what the general parser gives (the
// fuzz test holds it to that).
func parseCanonical(line []byte) (e Entry, ok bool) {
	c := cursor{s: line}
	var path string
	if !c.lit(`{"path":`) {
		return e, false
	}
	if path, ok = c.plainString(); !ok || path == "" {
		return e, false
	}
	e.Path = path
	if !c.lit(`,"type":"`) || c.i+2 > len(c.s) || c.s[c.i+1] != '"' || !validType(c.s[c.i]) {
		return e, false
	}
	e.Type = c.s[c.i]
	c.i += 2
	if !c.lit(`,"mode":"`) {
		return e, false
	}
	mode, ok := c.octal()
	if !ok || mode > 0o7777 || !c.lit(`","uid":`) {
		return e, false
	}
	e.Mode = uint32(mode)
	uid, ok := c.uint()
	if !ok || uid > math.MaxUint32 || !c.lit(`,"gid":`) {
		return e, false
	}
	gid, ok := c.uint()
	if !ok || gid > math.MaxUint32 || !c.lit(`,"size":`) {
		return e, false
	}
	e.UID, e.GID = uint32(uid), uint32(gid)
	if e.Size, ok = c.int(); !ok || !c.lit(`,"mtime":`) {
		return e, false
	}
	if e.Mtime, ok = c.int(); !ok || !c.lit(`,"ino":`) {
		return e, false
	}
	if e.Ino, ok = c.uint(); !ok || !c.lit(`,"ctime":`) {
		return e, false
	}
	if e.Ctime, ok = c.int(); !ok {
		return e, false
	}
	// The optional fields, each where AppendEntry puts it.
	if e.Type == TypeSymlink && c.lit(`,"target":`) {
		if e.Target, ok = c.plainString(); !ok {
			return e, false
		}
	}
	if c.lit(`,"hl":`) {
		n, ok := c.uint()
		if !ok || n > 1<<40 {
			return e, false
		}
		e.Group = int(n)
	}
	if c.lit(`,"unstable":true`) {
		e.Unstable = true
	}
	if e.Type == TypeSkipped && c.lit(`,"skip":`) {
		if e.Skip, ok = c.plainString(); !ok {
			return e, false
		}
	}
	if c.lit(`,"sino":`) {
		if e.SnapIno, ok = c.uint(); !ok {
			return e, false
		}
	}
	if c.i != len(c.s)-1 || c.s[c.i] != '}' {
		return e, false
	}
	if e.Type == TypeSkipped && e.Skip == "" {
		e.Skip = "not copied"
	}
	return e, true
}

// cursor reads parseCanonical's line.
type cursor struct {
	s []byte
	i int
}

// lit consumes lit if the line goes on with it.
func (c *cursor) lit(lit string) bool {
	if !bytes.HasPrefix(c.s[c.i:], []byte(lit)) {
		return false
	}
	c.i += len(lit)
	return true
}

// plainString consumes a JSON string without escapes or control bytes
// that is valid UTF-8.
func (c *cursor) plainString() (string, bool) {
	if c.i >= len(c.s) || c.s[c.i] != '"' {
		return "", false
	}
	start := c.i + 1
	ascii := true
	for j := start; j < len(c.s); j++ {
		switch b := c.s[j]; {
		case b == '"':
			s := c.s[start:j]
			if !ascii && !utf8.Valid(s) {
				return "", false
			}
			c.i = j + 1
			return string(s), true
		case b == '\\' || b < 0x20:
			return "", false
		case b >= 0x80:
			ascii = false
		}
	}
	return "", false
}

// uint consumes decimal digits that fit a uint64.
func (c *cursor) uint() (uint64, bool) {
	var n uint64
	j := c.i
	for ; j < len(c.s) && c.s[j] >= '0' && c.s[j] <= '9'; j++ {
		d := uint64(c.s[j] - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if j == c.i {
		return 0, false
	}
	c.i = j
	return n, true
}

// int consumes an optional minus and digits that fit an int64.
func (c *cursor) int() (int64, bool) {
	neg := c.i < len(c.s) && c.s[c.i] == '-'
	if neg {
		c.i++
	}
	n, ok := c.uint()
	switch {
	case !ok:
		return 0, false
	case neg && n <= 1<<63:
		return int64(-n), true // -(1<<63) wraps to itself: MinInt64
	case !neg && n <= math.MaxInt64:
		return int64(n), true
	}
	return 0, false
}

// octal consumes 1 to 6 octal digits.
func (c *cursor) octal() (uint64, bool) {
	var n uint64
	j := c.i
	for ; j < len(c.s) && j-c.i < 7 && c.s[j] >= '0' && c.s[j] <= '7'; j++ {
		n = n*8 + uint64(c.s[j]-'0')
	}
	if j == c.i || j-c.i > 6 {
		return 0, false
	}
	c.i = j
	return n, true
}
