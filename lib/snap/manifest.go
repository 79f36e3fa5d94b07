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

func validType(c byte) bool {
	switch c {
	case TypeFile, TypeDir, TypeSymlink, TypeFIFO, TypeSocket, TypeDevice, TypeOtherFS, TypeSkipped:
		return true
	}
	return false
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
