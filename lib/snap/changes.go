package snap

import (
	"encoding/base64"
	"unicode/utf8"
)

// Ops of a change.
const (
	OpNew      = "new"
	OpChange   = "change"
	OpDelete   = "delete"
	OpSkip     = "skip"
	OpUnstable = "unstable"
)

// Change is one line of a change list.
type Change struct {
	Op      string // OpNew, OpChange, OpDelete, OpSkip, OpUnstable
	Path    string // relative to the snapshot folder ("store/a"), any bytes
	Type    byte   // the entry type (TypeFile...)
	Itemize string // rsync's YXcstpoguax for new and change; "" otherwise
	Target  string // symlink target for symlink lines
	LinkTo  string // hardlink lines: the name (same tree) this file is linked to
	Reason  string // skip: "fifo", "socket", "device", "other filesystem", or why a file or folder could not be copied
}

// Line formats the change as one change-list line (without newline):
//
//	>f.st...... store/notes.md
//	cL+++++++++ store/etc -> /etc/passwd
//	hf+++++++++ store/b => store/a
//	*deleting   store/old/
//	skipped store/pipe (fifo)
//	skipped store/d/d/.../d (nested deeper than 1000 folders)
//	unstable store/busy.log
//
// Names (on both sides of -> and =>) are escaped with EscapeName, so a
// line is always one line.
func (c *Change) Line() string {
	b := make([]byte, 0, 20+len(c.Path)+len(c.Target)+len(c.LinkTo))
	switch c.Op {
	case OpNew, OpChange:
		b = append(b, c.Itemize...)
		b = append(b, ' ')
	case OpDelete:
		b = append(b, "*deleting   "...)
	case OpSkip:
		b = append(b, "skipped "...)
	case OpUnstable:
		b = append(b, "unstable "...)
	}
	b = appendEscaped(b, c.Path)
	if c.Type == TypeDir && c.Op != OpSkip && c.Op != OpUnstable {
		b = append(b, '/')
	}
	if c.Type == TypeSymlink && (c.Op == OpNew || c.Op == OpChange) {
		b = append(b, " -> "...)
		b = appendEscaped(b, c.Target)
	}
	if c.LinkTo != "" && (c.Op == OpNew || c.Op == OpChange) {
		b = append(b, " => "...)
		b = appendEscaped(b, c.LinkTo)
	}
	if c.Op == OpSkip {
		b = append(b, " ("...)
		b = appendEscaped(b, c.Reason)
		b = append(b, ')')
	}
	return string(b)
}

// ChangeJSON is the --json form of a Change (one JSON Lines record).
type ChangeJSON struct {
	Op        string `json:"op"`
	Path      string `json:"path,omitempty"`
	PathB64   string `json:"path_b64,omitempty"` // the path's bytes when they are not UTF-8
	Type      string `json:"type"`
	Itemize   string `json:"itemize,omitempty"`
	Target    string `json:"target,omitempty"`
	TargetB64 string `json:"target_b64,omitempty"`
	LinkTo    string `json:"link_to,omitempty"`     // hardlink lines: the name this file is linked to
	LinkToB64 string `json:"link_to_b64,omitempty"` // the same when it is not UTF-8
	Reason    string `json:"reason,omitempty"`
	Line      string `json:"line"` // the change-list line
}

// JSON returns the JSON record of c.
func (c *Change) JSON() ChangeJSON {
	j := ChangeJSON{Op: c.Op, Type: TypeName(c.Type), Itemize: c.Itemize, Reason: c.Reason, Line: c.Line()}
	j.Path, j.PathB64 = textOrB64(c.Path)
	if c.Type == TypeSymlink {
		j.Target, j.TargetB64 = textOrB64(c.Target)
	}
	if c.LinkTo != "" {
		j.LinkTo, j.LinkToB64 = textOrB64(c.LinkTo)
	}
	return j
}

func textOrB64(s string) (string, string) {
	if utf8.ValidString(s) {
		return s, ""
	}
	return "", base64.StdEncoding.EncodeToString([]byte(s))
}

// TypeName is the word for an entry type.
func TypeName(t byte) string {
	switch t {
	case TypeFile:
		return "file"
	case TypeDir:
		return "dir"
	case TypeSymlink:
		return "symlink"
	case TypeFIFO:
		return "fifo"
	case TypeSocket:
		return "socket"
	case TypeDevice:
		return "device"
	case TypeOtherFS:
		return "other filesystem"
	case TypeSkipped:
		return "uncopyable"
	}
	return "unknown"
}

func special(t byte) bool {
	return t == TypeFIFO || t == TypeSocket || t == TypeDevice || t == TypeOtherFS || t == TypeSkipped
}

// skipReason is why special entry e is not in a snapshot, as its
// change-list line says.
func skipReason(e *Entry) string {
	if e.Type == TypeSkipped {
		return e.Skip
	}
	return TypeName(e.Type)
}

// sameContent reports whether the snapshot copy made for prev can stand
// for cur: nothing a reader could see has changed, and the source inode
// and its ctime are the same (so neither bytes nor metadata were touched).
func sameContent(prev, cur *Entry) bool {
	return sameMeta(prev, cur) && prev.Target == cur.Target &&
		prev.Ino == cur.Ino && prev.Ctime == cur.Ctime && !prev.Unstable
}

// itemize compares an entry with its previous state and returns rsync's
// YXcstpoguax string, or "" when there is nothing to list. prev nil means
// new. quick compares as rsync's quick check does (size and mtime only for
// content); otherwise the source inode and ctime count too.
func itemize(prev, cur *Entry, quick bool) string {
	var x byte
	switch cur.Type {
	case TypeFile:
		x = 'f'
	case TypeDir:
		x = 'd'
	case TypeSymlink:
		x = 'L'
	default:
		return ""
	}
	if prev == nil || prev.Type != cur.Type {
		if x == 'f' {
			return ">f+++++++++"
		}
		return "c" + string(x) + "+++++++++"
	}
	b := []byte("...........")
	b[1] = x
	changed := false
	set := func(i int, c byte) { b[i] = c; changed = true }
	switch cur.Type {
	case TypeFile:
		if prev.Size != cur.Size {
			set(3, 's')
		}
		if prev.Mtime != cur.Mtime {
			set(4, 't')
		}
		// A new ctime alone (same inode) is explained by a visible
		// metadata change; otherwise it means the bytes may have changed.
		meta := prev.Mode != cur.Mode || prev.UID != cur.UID || prev.GID != cur.GID
		if prev.Size != cur.Size || prev.Mtime != cur.Mtime || prev.Unstable ||
			(!quick && !cur.samePrev && (prev.Ino != cur.Ino || (prev.Ctime != cur.Ctime && !meta))) {
			b[0] = '>'
			changed = true
		}
	case TypeDir:
		if prev.Mtime != cur.Mtime {
			set(4, 't')
		}
	case TypeSymlink:
		if prev.Target != cur.Target {
			b[0] = 'c'
			set(2, 'c')
		}
		if prev.Mtime != cur.Mtime {
			set(4, 't')
		}
	}
	if cur.Type != TypeSymlink && prev.Mode != cur.Mode {
		set(5, 'p')
	}
	if prev.UID != cur.UID {
		set(6, 'o')
	}
	if prev.GID != cur.GID {
		set(7, 'g')
	}
	if !changed {
		return ""
	}
	return string(b)
}

// compare lists the changes from the entries of prev to cur (both in walk
// order), as the change list shows them: deletions first (deepest first),
// then new and changed entries in walk order, then a skipped line for every
// special file in cur, then an unstable line for every unstable entry.
// byPath indexes prev; its entries' seen marks are reset and used. quick
// is a restore's comparison (prev is the live tree, cur the snapshot):
// size and mtime only, and the live special files are listed as deleted.
// Names sharing an inode are listed as rsync -H lists them (hardlink.go).
func compare(prev []Entry, byPath map[string]*Entry, cur []Entry, quick bool) []Change {
	return compareTrees(prev, byPath, cur, quick, false)
}

// compareTrees is compare; curLive says that cur is a walk of the live
// trees, whose names share an inode when their inode numbers are equal
// (a manifest numbers its groups). With quick, prev is such a walk.
func compareTrees(prev []Entry, byPath map[string]*Entry, cur []Entry, quick, curLive bool) []Change {
	for i := range prev {
		prev[i].seen = false
	}
	hl := newHardlinks(prev, byPath, cur, quick, quick, curLive)
	var out, tail, typeDels []Change
	// A restore (quick) leaves what the snapshot skipped as it is
	// (restore_keep.go): its line says skipped, and nothing at or below
	// it is deleted.
	var kept map[string]bool
	if quick {
		kept = skippedPaths(cur)
	}
	for i := range cur {
		e := &cur[i]
		p := byPath[e.Path]
		if p != nil {
			p.seen = true
		}
		if special(e.Type) {
			if quick && p != nil && special(p.Type) && p.Type != TypeOtherFS && e.Type != TypeSkipped {
				continue // a restore: the live one's *deleting line says what happens
			}
			tail = append(tail, Change{Op: OpSkip, Path: e.Path, Type: e.Type, Reason: skipReason(e)})
			continue
		}
		if p != nil && p.Type != e.Type && !special(p.Type) {
			typeDels = append(typeDels, Change{Op: OpDelete, Path: p.Path, Type: p.Type})
		}
		if p != nil && special(p.Type) {
			p = nil
		}
		if hl != nil && e.Type == TypeFile {
			if c, ok := hl.later[e.Path]; ok {
				if c != nil {
					out = append(out, *c)
				}
				continue
			}
		}
		if it := hl.itemize(p, e, quick); it != "" {
			op := OpChange
			if p == nil || p.Type != e.Type {
				op = OpNew
			}
			out = append(out, Change{Op: op, Path: e.Path, Type: e.Type, Itemize: it, Target: e.Target})
		}
	}
	for i := range cur {
		if cur[i].Unstable {
			tail = append(tail, Change{Op: OpUnstable, Path: cur[i].Path, Type: cur[i].Type})
		}
	}
	var dels []Change
	for i := len(prev) - 1; i >= 0; i-- {
		p := &prev[i]
		if underKept(p.Path, kept) {
			continue // left as it is
		}
		if special(p.Type) {
			// A restore (quick: prev is the live tree) never recreates a
			// FIFO, socket or device, so the live ones go: say so.
			if quick && p.Type != TypeOtherFS {
				dels = append(dels, Change{Op: OpDelete, Path: p.Path, Type: p.Type})
			}
			continue
		}
		if !p.seen {
			dels = append(dels, Change{Op: OpDelete, Path: p.Path, Type: p.Type})
		}
	}
	dels = append(dels, typeDels...)
	return append(append(dels, out...), tail...)
}

// index maps entries by path.
func index(es []Entry) map[string]*Entry {
	m := make(map[string]*Entry, len(es))
	for i := range es {
		m[es[i].Path] = &es[i]
	}
	return m
}
