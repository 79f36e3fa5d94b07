package snap

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/roster-sh/roster/lib/errs"
)

// ManifestFormat is the format number of manifest.jsonl.
const ManifestFormat = 1

// Entry types, as the manifest spells them.
const (
	TypeFile    = 'f'
	TypeDir     = 'd'
	TypeSymlink = 'l'
	TypeFIFO    = 'p'
	TypeSocket  = 's'
	TypeDevice  = 'c' // character and block devices alike
	TypeOtherFS = 'x' // a mount point of another filesystem: not crossed
	TypeSkipped = 'u' // a file or folder the take could not copy (Entry.Skip says why): not in the snapshot
)

// Entry is one line of a manifest: an entry of the store or a channel store
// as it was when the snapshot was taken.
type Entry struct {
	Path     string // relative to the snapshot folder: "store", "store/a/b", "channel-stores/ENC/x"; any bytes
	Type     byte
	Mode     uint32 // permission bits with setuid, setgid and sticky (07777)
	UID, GID uint32
	Size     int64
	Mtime    int64  // ns since the epoch
	Target   string // symlink target text, any bytes
	Ino      uint64 // the source inode when taken
	Ctime    int64  // the source ctime when taken, ns
	Group    int    // hardlink group within the snapshot (same number, same inode); 0 = none
	Unstable bool   // changed while it was copied, every try
	Skip     string // TypeSkipped: why it could not be copied ("nested deeper than 1000 folders", ...)
	SnapIno  uint64 // restore record only: the snapshot inode whose bytes the live inode holds

	seen     bool // take/diff bookkeeping, not stored
	samePrev bool // take: the previous snapshot's copy holds these bytes (by the restore record), not stored
	multi    bool // a walk's entry whose inode had more than one link (entryOf), not stored
}

// Header is the first line of a manifest.
type Header struct {
	Format   int       `json:"format"`
	ID       string    `json:"id"`
	TakenAt  time.Time `json:"taken_at"`
	Label    string    `json:"label"` // "" or "pre-restore"
	Prev     string    `json:"prev"`  // the snapshot this one was compared with ("" for the first)
	Entries  int       `json:"entries"`
	Files    int       `json:"files"`
	Bytes    int64     `json:"bytes"` // sum of regular-file sizes (each hardlinked inode once)
	Unstable int       `json:"unstable"`
	Skipped  int       `json:"skipped"`
	// Scope, in a restore record (record.go) only: the trees or paths the
	// restore put back ("store", "channel-stores/ENC", "store/notes").
	Scope []string `json:"scope,omitempty"`
}

// LabelPreRestore marks the snapshot a restore takes first (its undo).
const LabelPreRestore = "pre-restore"

// ErrBadManifest is wrapped by every manifest decoding error.
// It is a refusal (exit 14) without saying "refused" in the message.
var ErrBadManifest error = badManifest{}

type badManifest struct{}

func (badManifest) Error() string        { return "bad manifest" }
func (badManifest) Is(target error) bool { return target == errs.ErrRefused }

// AppendEntry appends e's manifest line (without the newline) to b. Paths
// and targets that are valid UTF-8 are JSON strings ("path", "target");
// any other bytes are base64 ("path_b64", "target_b64"), so every name
// round-trips exactly.
func AppendEntry(b []byte, e *Entry) []byte {
	b = append(b, '{')
	b = appendBytesField(b, "path", e.Path)
	b = append(b, `,"type":"`...)
	b = append(b, e.Type, '"')
	b = append(b, `,"mode":"`...)
	b = appendOctal(b, e.Mode)
	b = append(b, `","uid":`...)
	b = strconv.AppendUint(b, uint64(e.UID), 10)
	b = append(b, `,"gid":`...)
	b = strconv.AppendUint(b, uint64(e.GID), 10)
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, e.Size, 10)
	b = append(b, `,"mtime":`...)
	b = strconv.AppendInt(b, e.Mtime, 10)
	b = append(b, `,"ino":`...)
	b = strconv.AppendUint(b, e.Ino, 10)
	b = append(b, `,"ctime":`...)
	b = strconv.AppendInt(b, e.Ctime, 10)
	if e.Type == TypeSymlink {
		b = append(b, ',')
		b = appendBytesField(b, "target", e.Target)
	}
	if e.Group != 0 {
		b = append(b, `,"hl":`...)
		b = strconv.AppendInt(b, int64(e.Group), 10)
	}
	if e.Unstable {
		b = append(b, `,"unstable":true`...)
	}
	if e.Skip != "" {
		b = append(b, ',')
		b = appendBytesField(b, "skip", e.Skip)
	}
	if e.SnapIno != 0 {
		b = append(b, `,"sino":`...)
		b = strconv.AppendUint(b, e.SnapIno, 10)
	}
	return append(b, '}')
}

func appendOctal(b []byte, m uint32) []byte {
	s := strconv.FormatUint(uint64(m), 8)
	for i := len(s); i < 4; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

func appendBytesField(b []byte, key, s string) []byte {
	if !utf8.ValidString(s) {
		b = append(b, '"')
		b = append(b, key...)
		b = append(b, `_b64":"`...)
		b = base64.StdEncoding.AppendEncode(b, []byte(s))
		return append(b, '"')
	}
	b = append(b, '"')
	b = append(b, key...)
	b = append(b, `":`...)
	return appendJSONString(b, s)
}

func appendJSONString(b []byte, s string) []byte {
	simple := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			simple = false
			break
		}
	}
	if simple {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	q, _ := json.Marshal(s) // valid UTF-8: exact
	return append(b, q...)
}

// ParseEntry decodes one manifest line. It accepts exactly one flat JSON
// object; unknown keys are ignored (fields are only ever added).
func ParseEntry(line []byte) (Entry, error) {
	if e, ok := parseCanonical(line); ok {
		return e, nil
	}
	return parseEntryJSON(line)
}

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

func validType(c byte) bool {
	switch c {
	case TypeFile, TypeDir, TypeSymlink, TypeFIFO, TypeSocket, TypeDevice, TypeOtherFS, TypeSkipped:
		return true
	}
	return false
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

// ParseHeader decodes a manifest's first line, refusing an unknown format.
func ParseHeader(line []byte) (Header, error) {
	var h Header
	if err := json.Unmarshal(line, &h); err != nil {
		return h, fmt.Errorf("%w: header: %v", ErrBadManifest, err)
	}
	if h.Format != ManifestFormat {
		return h, fmt.Errorf("%w: unknown format %d (this build reads %d)", ErrBadManifest, h.Format, ManifestFormat)
	}
	return h, nil
}

// Manifest is a decoded manifest.jsonl.
type Manifest struct {
	Header  Header
	Entries []Entry
}

// ParseManifest decodes a whole manifest. Unlike a journal, a manifest is
// written whole and renamed into place, so any bad line is a refusal.
// A large manifest is parsed in a few pieces at once (every take reads
// the previous one whole).
func ParseManifest(data []byte) (*Manifest, error) {
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 {
		return nil, fmt.Errorf("%w: no header line", ErrBadManifest)
	}
	h, err := ParseHeader(data[:nl])
	if err != nil {
		return nil, err
	}
	rest := data[nl+1:]
	if len(rest) > 0 && rest[len(rest)-1] != '\n' {
		n := 2 + bytes.Count(rest, []byte{'\n'})
		return nil, fmt.Errorf("%w: line %d: torn (no newline)", ErrBadManifest, n)
	}
	// Cut the entries at line ends into pieces of about the same size.
	pieces := 1
	if len(rest) >= 1<<20 {
		pieces = poolWorkers()
	}
	bounds := make([]int, 0, pieces+1)
	bounds = append(bounds, 0)
	for i := 1; i < pieces; i++ {
		at := len(rest) * i / pieces
		if at <= bounds[len(bounds)-1] {
			continue
		}
		j := bytes.IndexByte(rest[at:], '\n')
		if j < 0 {
			break
		}
		if at+j+1 < len(rest) {
			bounds = append(bounds, at+j+1)
		}
	}
	bounds = append(bounds, len(rest))
	// One slice for every entry, each piece parsed into its own part of it.
	first := make([]int, len(bounds)) // the index of each piece's first entry
	for k := 0; k+1 < len(bounds); k++ {
		first[k+1] = first[k] + bytes.Count(rest[bounds[k]:bounds[k+1]], []byte{'\n'})
	}
	entries := make([]Entry, first[len(first)-1])
	perr := make([]error, len(bounds)-1)
	var wg sync.WaitGroup
	for k := range perr {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			chunk := rest[bounds[k]:bounds[k+1]]
			for i := first[k]; len(chunk) > 0; i++ {
				j := bytes.IndexByte(chunk, '\n')
				e, err := ParseEntry(chunk[:j])
				if err != nil {
					perr[k] = fmt.Errorf("line %d: %w", 2+i, err)
					return
				}
				entries[i] = e
				chunk = chunk[j+1:]
			}
		}(k)
	}
	wg.Wait()
	for _, err := range perr {
		if err != nil {
			return nil, err // the first bad line
		}
	}
	if len(entries) != h.Entries {
		return nil, fmt.Errorf("%w: %d entries, header says %d", ErrBadManifest, len(entries), h.Entries)
	}
	m := &Manifest{Header: h, Entries: entries}
	return m, nil
}

// WriteTo writes the manifest as Encode gives it, in pieces of about
// 64 KiB, so a large manifest is never held whole in memory.
func (m *Manifest) WriteTo(w io.Writer) (int64, error) {
	hb, _ := json.Marshal(m.Header)
	b := make([]byte, 0, 64<<10+4096)
	b = append(append(b, hb...), '\n')
	var n int64
	for i := range m.Entries {
		b = append(AppendEntry(b, &m.Entries[i]), '\n')
		if len(b) >= 64<<10 {
			k, err := w.Write(b)
			n += int64(k)
			if err != nil {
				return n, err
			}
			b = b[:0]
		}
	}
	k, err := w.Write(b)
	return n + int64(k), err
}

// Encode writes the manifest: the header line, then one line per entry.
func (m *Manifest) Encode() []byte {
	hb, _ := json.Marshal(m.Header)
	b := make([]byte, 0, len(hb)+1+len(m.Entries)*160)
	b = append(append(b, hb...), '\n')
	for i := range m.Entries {
		b = append(AppendEntry(b, &m.Entries[i]), '\n')
	}
	return b
}
