package tms

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// The scanner decodeFast is built on (codec.go): JSON values read in
// place, the subset the writer produces, anything else a "no".

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
