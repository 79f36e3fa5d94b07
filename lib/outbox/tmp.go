package outbox

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// TmpBound is what BoundTmp or EmptyTmp removed from tmp/.
type TmpBound struct {
	Removed int   // entries removed
	Bytes   int64 // disk they used
}

// tmpEntry is one entry of tmp/ as listed.
type tmpEntry struct {
	name  string
	bytes int64 // disk used (st_blocks), so a sparse file costs what it holds
	plain bool  // a regular file
}

// listTmp lists tmp/ without following anything.
func (r *Reader) listTmp() ([]tmpEntry, error) {
	d, err := os.Open(filepath.Join(r.dir, "tmp")) // root-owned, in a root-owned outbox/: the box cannot swap it
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := make([]tmpEntry, 0, len(names))
	for _, name := range names {
		var st unix.Stat_t
		if unix.Fstatat(int(d.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue // gone meanwhile
		}
		out = append(out, tmpEntry{name: name, bytes: st.Blocks * 512, plain: st.Mode&unix.S_IFMT == unix.S_IFREG})
	}
	return out, nil
}

// removeTmp removes one entry of tmp/ and all under it: os.RemoveAll
// works relative to the folders it opens and follows no link.
func (r *Reader) removeTmp(name string) bool {
	return os.RemoveAll(filepath.Join(r.dir, "tmp", name)) == nil
}

// BoundTmp keeps tmp/ within MaxTmpBytes and MaxTmpEntries while the box
// runs (Containment): anything in it that is not a regular file (the
// writer only ever makes files there) is removed, then the largest files
// until what is left fits, then, past MaxTmpEntries, the entries with the
// highest names (claims last). A writer whose file was removed sees its
// rename fail; only a box that overfills tmp/ loses anything.
func (r *Reader) BoundTmp() (TmpBound, error) {
	ents, err := r.listTmp()
	if err != nil {
		return TmpBound{}, fmt.Errorf("outbox %s: list tmp/: %w", r.dir, err)
	}
	var b TmpBound
	var total int64
	keep := ents[:0]
	for _, e := range ents {
		if !e.plain {
			if r.removeTmp(e.name) {
				b.Removed++
				b.Bytes += e.bytes
			}
			continue
		}
		total += e.bytes
		keep = append(keep, e)
	}
	if total > MaxTmpBytes {
		sort.Slice(keep, func(i, j int) bool { return keep[i].bytes > keep[j].bytes })
		for len(keep) > 0 && total > MaxTmpBytes {
			e := keep[0]
			keep = keep[1:]
			if r.removeTmp(e.name) {
				b.Removed++
				b.Bytes += e.bytes
				total -= e.bytes
			}
		}
	}
	if len(keep) > MaxTmpEntries {
		sort.Slice(keep, func(i, j int) bool {
			ci, cj := strings.HasSuffix(keep[i].name, ".claim"), strings.HasSuffix(keep[j].name, ".claim")
			if ci != cj {
				return cj // non-claims first
			}
			return keep[i].name > keep[j].name
		})
		for _, e := range keep[:len(keep)-MaxTmpEntries] {
			if r.removeTmp(e.name) {
				b.Removed++
				b.Bytes += e.bytes
			}
		}
	}
	return b, nil
}

// EmptyTmp removes everything in tmp/: call it once the box has ended, so
// nothing a run stashed there is read back by a later run through
// ~/self/runs/ (not even after a restore).
func (r *Reader) EmptyTmp() (TmpBound, error) {
	ents, err := r.listTmp()
	if err != nil {
		return TmpBound{}, fmt.Errorf("outbox %s: list tmp/: %w", r.dir, err)
	}
	var b TmpBound
	var first error
	for _, e := range ents {
		if r.removeTmp(e.name) {
			b.Removed++
			b.Bytes += e.bytes
		} else if first == nil {
			first = fmt.Errorf("outbox %s: could not remove tmp/%s", r.dir, e.name)
		}
	}
	return b, first
}
