package snap

import (
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/home"
)

// A parallel scan: take's fast path (docs/store.md step 5, "nothing changed
// must be fast: a stat walk"). Its answer does not depend on order (every
// live entry matches its previous entry, and as many match as the
// previous manifest holds), so one walker reads folders (getdents gives
// each name's type, so sub-folders are found without a stat) and the pool
// stats and compares each folder's other entries. Any difference stops
// the walk.
type scanner struct {
	w       *walker // prev, rec: read only here
	p       *pool
	dev     uint64
	matched atomic.Int64
	stop    atomic.Bool
	buf     []byte
}

// scanParallel walks the live roots as scan does and reports whether
// anything differs from the previous manifest (w.prev, w.rec).
func (s *session) scanParallel(w *walker, roots []root, prevID string) (bool, error) {
	sc := &scanner{w: w, p: newPool(), buf: make([]byte, 32<<10)}
	err := func() error {
		for _, r := range roots {
			prevRoot := -1
			if w.rec != nil {
				prevRoot = s.prevTree(prevID, r) // sc.dir owns it
			}
			// The root's descriptor stays the caller's: dup it for the walk.
			fd, err := unix.Dup(r.fd)
			if err != nil {
				closeFd(prevRoot)
				return err
			}
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				unix.Close(fd)
				closeFd(prevRoot)
				return fmt.Errorf("stat %s: %w", r.path, err)
			}
			sc.dev = st.Dev
			e := entryOf(r.path, &st)
			sc.check(&e)
			if err := sc.dir(fd, prevRoot, r.path, r.store, 0); err != nil {
				return err
			}
			if sc.stop.Load() {
				return nil
			}
		}
		return nil
	}()
	if perr := sc.p.wait(); err == nil {
		err = perr
	}
	if err != nil {
		return false, err
	}
	if sc.stop.Load() {
		return true, nil
	}
	n := 0
	for _, e := range w.prev {
		if !special(e.Type) {
			n++
		}
	}
	return sc.matched.Load() != int64(n), nil
}

// check compares one live entry with the previous manifest, as the
// walker's scan mode does.
func (sc *scanner) check(e *Entry) {
	if special(e.Type) {
		return
	}
	p := sc.w.prev[e.Path]
	if p == nil || special(p.Type) || itemize(p, e, false) != "" {
		sc.stop.Store(true)
		return
	}
	sc.matched.Add(1)
}

// dir scans the folder open as fd (which it owns, as prev) at path.
func (sc *scanner) dir(fd, prev int, path string, skipLocks bool, depth int) error {
	ref := sc.p.newDirRef(func(bool) error {
		unix.Close(fd)
		closeFd(prev)
		return nil
	})
	defer ref.release()
	ents, err := readEntries(fd, sc.buf)
	if err != nil {
		return fmt.Errorf("read folder %s: %w", EscapeName(path), err)
	}
	if sc.w.progress != nil {
		sc.w.progress(len(ents))
	}
	inos := listInodes(prev, sc.w.dino, 0) // prev's listing, for the restore record's checks
	var batch []string
	flush := func() {
		if len(batch) == 0 {
			return
		}
		names := batch
		batch = nil
		ref.run(func(*[]byte) error {
			for _, n := range names {
				if sc.stop.Load() {
					return nil
				}
				if err := sc.file(fd, prev, inos, path, n); err != nil {
					return err
				}
			}
			return nil
		})
	}
	defer flush()
	for _, de := range ents {
		if sc.stop.Load() {
			return nil
		}
		if err := sc.p.Err(); err != nil {
			return err
		}
		if skipLocks && de.name == home.StoreLocksName {
			continue
		}
		if de.typ != unix.DT_DIR && de.typ != unix.DT_UNKNOWN {
			if batch = append(batch, de.name); len(batch) >= batchSize {
				flush()
			}
			continue
		}
		// A folder (or a name of unknown type): stat it here, in order to
		// walk into it.
		rel := path + "/" + de.name
		var st unix.Stat_t
		if err := unix.Fstatat(fd, de.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				continue // gone: the previous entry goes unmatched
			}
			return fmt.Errorf("stat %s: %w", EscapeName(rel), err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if batch = append(batch, de.name); len(batch) >= batchSize {
				flush()
			}
			continue
		}
		if err := sc.descend(fd, prev, rel, de.name, &st, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// descend walks into folder name of fd (rel its path, st its stat, depth
// its depth), against the previous snapshot's folder of that path (in
// prev) when there is one. A mount point of another filesystem and a
// folder too deep are skipped (specials, never counted); a folder gone or
// swapped since its stat stops the scan: something changed.
func (sc *scanner) descend(fd, prev int, rel, name string, st *unix.Stat_t, depth int) error {
	e := entryOf(rel, st)
	if st.Dev != sc.dev {
		return nil // another filesystem's mount point: special, never counted
	}
	if depth > maxDepth {
		return nil // skipped (reasonTooDeep): special, never counted
	}
	sub, err := openDirAt(fd, name)
	if err != nil {
		// Gone or swapped since the stat: something changed.
		sc.stop.Store(true)
		return nil
	}
	var fst unix.Stat_t
	if err := unix.Fstat(sub, &fst); err != nil || fst.Ino != st.Ino || fst.Dev != st.Dev {
		unix.Close(sub)
		sc.stop.Store(true)
		return nil
	}
	sc.check(&e)
	if sc.stop.Load() {
		unix.Close(sub)
		return nil
	}
	psub := -1
	if prev >= 0 {
		if p := sc.w.prev[rel]; p != nil && p.Type == TypeDir {
			if pfd, err := openDirAt(prev, name); err == nil {
				psub = pfd
			}
		}
	}
	return sc.dir(sub, psub, rel, false, depth)
}

// file stats and compares one entry that is not a folder.
func (sc *scanner) file(dir, prev int, inos *folderInodes, path, name string) error {
	rel := path + "/" + name
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return nil
		}
		return fmt.Errorf("stat %s: %w", EscapeName(rel), err)
	}
	e := entryOf(rel, &st)
	switch e.Type {
	case TypeDir:
		sc.stop.Store(true) // became a folder since getdents: a change
		return nil
	case TypeSymlink:
		target, err := readlinkat(dir, name, st.Size)
		if err != nil {
			sc.stop.Store(true)
			return nil
		}
		e.Target = target
	case TypeFile:
		if sc.w.rec != nil {
			if ok, via := sc.w.fromPrev(prev, name, &e, inos); ok && via {
				e.samePrev = true
			}
		}
	}
	sc.check(&e)
	return nil
}
