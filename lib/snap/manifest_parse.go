package snap

// The general parser of manifest lines, for any line the canonical fast
// path (manifest_fast.go) does not take: one flat JSON object, its keys in
// any order, unknown keys ignored.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// parseEntryJSON is ParseEntry for any line: the general parser.
func parseEntryJSON(line []byte) (Entry, error) {
	var d entryDecoder
	p := parser{s: line}
	err := p.object(d.field)
	if err == nil && (!d.havePath || !d.haveType) {
		err = fmt.Errorf("path or type missing")
	}
	e := d.e
	if err == nil && (e.Path == "" || bytes.IndexByte([]byte(e.Path), 0) >= 0) {
		err = fmt.Errorf("empty path or NUL in path")
	}
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %v", ErrBadManifest, err)
	}
	if e.Type != TypeSymlink {
		e.Target = "" // only symlinks have one
	}
	if e.Type != TypeSkipped {
		e.Skip = ""
	} else if e.Skip == "" {
		e.Skip = "not copied"
	}
	return e, nil
}

// entryDecoder is the entry parseEntryJSON fills in, key by key.
type entryDecoder struct {
	e                  Entry
	havePath, haveType bool
}

// field decodes one key of an entry's object; unknown keys are ignored.
func (d *entryDecoder) field(key []byte, v value) error {
	switch string(key) {
	case "path", "path_b64", "target", "target_b64", "skip", "skip_b64", "type", "mode":
		return d.textField(key, v)
	case "uid", "gid", "ino", "sino", "size", "mtime", "ctime", "hl":
		return d.numberField(key, v)
	case "unstable":
		if string(v.raw) != "true" && string(v.raw) != "false" {
			return fmt.Errorf("bad unstable")
		}
		d.e.Unstable = string(v.raw) == "true"
	}
	return nil
}

// textField decodes a key whose value is a string: the names (plain or
// base64), the type and the octal mode.
func (d *entryDecoder) textField(key []byte, v value) error {
	e := &d.e
	switch string(key) {
	case "type":
		s, err := v.text(false)
		if err != nil {
			return err
		}
		if len(s) != 1 || !validType(s[0]) {
			return fmt.Errorf("unknown type %q", s)
		}
		e.Type, d.haveType = s[0], true
	case "mode":
		s, err := v.text(false)
		if err != nil {
			return err
		}
		m, err := strconv.ParseUint(s, 8, 32)
		if err != nil || m > 0o7777 {
			return fmt.Errorf("bad mode %q", s)
		}
		e.Mode = uint32(m)
	default: // path, target, skip, each maybe _b64
		s, err := v.text(bytes.HasSuffix(key, []byte("_b64")))
		if err != nil {
			return err
		}
		if key[0] == 's' {
			e.Skip = s
		} else if key[0] == 'p' {
			if d.havePath {
				return fmt.Errorf("path given twice")
			}
			e.Path, d.havePath = s, true
		} else {
			e.Target = s
		}
	}
	return nil
}

// numberField decodes a key whose value is a number: the owners, the
// inodes, the size and times, the hardlink group.
func (d *entryDecoder) numberField(key []byte, v value) error {
	e := &d.e
	switch string(key) {
	case "uid", "gid":
		n, err := v.uint(32)
		if err != nil {
			return err
		}
		if key[0] == 'u' {
			e.UID = uint32(n)
		} else {
			e.GID = uint32(n)
		}
	case "ino", "sino":
		n, err := v.uint(64)
		if err != nil {
			return err
		}
		if key[0] == 'i' {
			e.Ino = n
		} else {
			e.SnapIno = n
		}
	case "size", "mtime", "ctime":
		n, err := v.int()
		if err != nil {
			return err
		}
		switch key[0] {
		case 's':
			e.Size = n
		case 'm':
			e.Mtime = n
		default:
			e.Ctime = n
		}
	case "hl":
		n, err := v.int()
		if err != nil || n < 0 || n > 1<<40 {
			return fmt.Errorf("bad hl")
		}
		e.Group = int(n)
	}
	return nil
}

// parser reads one flat JSON object: string keys; string, number, true,
// false or null values. Nested values are refused.
type parser struct {
	s []byte
	i int
}

type value struct {
	raw []byte // the token as written
	str bool   // a JSON string (raw includes the quotes)
	esc bool   // the string holds backslash escapes
}

func (v value) text(b64 bool) (string, error) {
	if !v.str {
		return "", fmt.Errorf("want a string, got %.20q", v.raw)
	}
	inner := v.raw[1 : len(v.raw)-1]
	var s string
	if v.esc {
		if err := json.Unmarshal(v.raw, &s); err != nil {
			return "", err
		}
	} else {
		if !utf8.Valid(inner) {
			return "", fmt.Errorf("string is not UTF-8")
		}
		s = string(inner)
	}
	if b64 {
		d, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return "", err
		}
		return string(d), nil
	}
	return s, nil
}

func (v value) int() (int64, error) {
	if v.str {
		return 0, fmt.Errorf("want a number, got a string")
	}
	return strconv.ParseInt(string(v.raw), 10, 64)
}

func (v value) uint(bits int) (uint64, error) {
	if v.str {
		return 0, fmt.Errorf("want a number, got a string")
	}
	return strconv.ParseUint(string(v.raw), 10, bits)
}

func (p *parser) ws() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\r' || p.s[p.i] == '\n') {
		p.i++
	}
}

func (p *parser) object(field func(key []byte, v value) error) error {
	p.ws()
	if p.i >= len(p.s) || p.s[p.i] != '{' {
		return fmt.Errorf("not a JSON object")
	}
	p.i++
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return p.end()
	}
	for {
		p.ws()
		k, err := p.str()
		if err != nil {
			return err
		}
		if k.esc {
			return fmt.Errorf("escaped key")
		}
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return fmt.Errorf("missing ':'")
		}
		p.i++
		p.ws()
		var v value
		if p.i < len(p.s) && p.s[p.i] == '"' {
			v, err = p.str()
		} else {
			v, err = p.scalar()
		}
		if err != nil {
			return err
		}
		if err := field(k.raw[1:len(k.raw)-1], v); err != nil {
			return err
		}
		p.ws()
		if p.i >= len(p.s) {
			return fmt.Errorf("unterminated object")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return p.end()
		default:
			return fmt.Errorf("unexpected %q", p.s[p.i])
		}
	}
}

func (p *parser) end() error {
	p.ws()
	if p.i != len(p.s) {
		return fmt.Errorf("trailing data")
	}
	return nil
}

func (p *parser) str() (value, error) {
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return value{}, fmt.Errorf("want a string")
	}
	start := p.i
	esc := false
	for j := p.i + 1; j < len(p.s); j++ {
		switch c := p.s[j]; {
		case c == '\\':
			esc = true
			j++
		case c == '"':
			p.i = j + 1
			return value{raw: p.s[start:p.i], str: true, esc: esc}, nil
		case c < 0x20:
			return value{}, fmt.Errorf("control byte in string")
		}
	}
	return value{}, fmt.Errorf("unterminated string")
}

func (p *parser) scalar() (value, error) {
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == ',' || c == '}' || c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			break
		}
		if c == '{' || c == '[' || c == '"' {
			return value{}, fmt.Errorf("nested values are not allowed")
		}
		p.i++
	}
	if p.i == start {
		return value{}, fmt.Errorf("missing value")
	}
	return value{raw: p.s[start:p.i]}, nil
}
