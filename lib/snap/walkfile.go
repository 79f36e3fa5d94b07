package snap

import (
	"bytes"
	"errors"
	"fmt"
	"sort"

	"golang.org/x/sys/unix"
)

// The walk's files: a symlink or file built in the snapshot (linked to
// the previous snapshot's when unchanged, copied otherwise), and the
// fixes applied once a folder's files are done (walk.go walks).

func (w *walker) buildSymlink(dst, prevDir int, name string, e *Entry) error {
	if p := w.prev[e.Path]; p != nil && prevDir >= 0 && p.Type == TypeSymlink && p.Target == e.Target &&
		p.UID == e.UID && p.GID == e.GID && p.Mtime == e.Mtime {
		if unix.Linkat(prevDir, name, dst, name, 0) == nil {
			return nil
		}
	}
	if err := unix.Symlinkat(e.Target, dst, name); err != nil {
		return fmt.Errorf("make symlink %s in the snapshot: %w", EscapeName(e.Path), err)
	}
	if err := applyLinkMeta(dst, name, e); err != nil {
		return fmt.Errorf("%s in the snapshot: %w", EscapeName(e.Path), err)
	}
	return nil
}

// buildFile puts a regular file into the snapshot: a link to the same
// inode already made for another name of it in this take, a link to the
// previous snapshot's inode when nothing changed, or else a new copy.
func (w *walker) buildFile(src, dst, prevDir int, inos *folderInodes, name string, e *Entry, st *unix.Stat_t, buf *[]byte) error {
	key := devIno{st.Dev, st.Ino}
	if st.Nlink > 1 {
		if first, ok := w.links[key]; ok {
			f := &w.entries[first]
			if unix.Linkat(w.snapFd, f.Path, dst, name, 0) == nil {
				path := e.Path
				*e = *f
				e.Path = path
				return nil
			}
			// EMLINK (the snapshot's inode, shared with older snapshots,
			// is full) or the like: a fresh copy, which the group's later
			// names link to. The manifest keeps the source's one group.
			e.Group = f.Group
			w.newLeader = true
			return copyFile(w.pool, src, dst, name, e, buf)
		} else {
			e.Group = w.groups + 1 // claimed in entry() once the file is in
		}
	}
	if ok, via := w.fromPrev(prevDir, name, e, inos); ok {
		if unix.Linkat(prevDir, name, dst, name, 0) == nil {
			e.samePrev = via
			return nil
		}
		// EMLINK (too many links) or the old copy is missing: copy instead.
	}
	if err := copyFile(w.pool, src, dst, name, e, buf); err != nil {
		return err
	}
	e.samePrev = w.sameBytesAsPrev(dst, prevDir, name, e)
	return nil
}

// sameBytesAsPrev reports whether the new copy of live file e (name in
// dst) holds exactly the bytes of the previous snapshot's copy, for a file
// whose metadata is unchanged but whose inode or ctime moved (a no-op
// chown -R, new names from a restore): then it is no change to list. Only
// such files are read twice; a changed size or mtime is a change anyway.
func (w *walker) sameBytesAsPrev(dst, prevDir int, name string, e *Entry) bool {
	p := w.prev[e.Path]
	if p == nil || prevDir < 0 || e.Type != TypeFile || p.Type != TypeFile || p.Unstable || e.Unstable || !sameMeta(p, e) {
		return false
	}
	a, err := openRead(dst, name)
	if err != nil {
		return false
	}
	defer unix.Close(a)
	b, err := openRead(prevDir, name)
	if err != nil {
		return false
	}
	defer unix.Close(b)
	var st unix.Stat_t
	if unix.Fstat(b, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != e.Size {
		return false
	}
	return sameStream(a, b)
}

// sameStream compares two open files' bytes to their ends.
func sameStream(a, b int) bool {
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, ea := readFull(a, ba)
		nb, eb := readFull(b, bb)
		if ea != nil || eb != nil || na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false
		}
		if na < len(ba) {
			return true
		}
	}
}

func readFull(fd int, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

// fileOp puts a single-link file into the snapshot on the pool: a link to
// the previous snapshot's inode when nothing changed, else a new copy. A
// file that changes identity under it is stat'ed again and retried, up to
// maxTries times; one that is gone is left out, one that keeps changing
// is left out and listed as unstable, as the walker does.
func (w *walker) fileOp(src, dst, prevDir int, inos *folderInodes, name string, idx int, e Entry, buf *[]byte) error {
	for try := 1; ; try++ {
		copied := true
		if ok, via := w.fromPrev(prevDir, name, &e, inos); ok && unix.Linkat(prevDir, name, dst, name, 0) == nil {
			copied = false
			e.samePrev = via
		}
		var err error
		if copied {
			if err = copyFile(w.pool, src, dst, name, &e, buf); err == nil {
				e.samePrev = w.sameBytesAsPrev(dst, prevDir, name, &e)
			}
		}
		if err == nil {
			if copied || e.samePrev {
				w.fix(fileFix{idx: idx, e: e})
			}
			return nil
		}
		var se *skipError
		if errors.As(err, &se) {
			w.fix(fileFix{idx: idx, e: skipped(e, se.reason)})
			return nil
		}
		if !errors.Is(err, errRaced) {
			return err
		}
		if try >= maxTries {
			w.fix(fileFix{idx: idx, drop: true, raced: true})
			return nil
		}
		var st unix.Stat_t
		if err := unix.Fstatat(src, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				w.fix(fileFix{idx: idx, drop: true})
				return nil
			}
			return fmt.Errorf("stat %s: %w", EscapeName(e.Path), err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
			// Now something the walker handles in order: list it as
			// having raced rather than guess.
			w.fix(fileFix{idx: idx, drop: true, raced: true})
			return nil
		}
		e = entryOf(e.Path, &st)
	}
}

func (w *walker) fix(f fileFix) {
	w.mu.Lock()
	w.fixes = append(w.fixes, f)
	w.mu.Unlock()
}

// applyFixes puts what the pooled operations learnt into the entries,
// once the pool is done.
func (w *walker) applyFixes() {
	if len(w.fixes) == 0 {
		return
	}
	sort.Slice(w.fixes, func(i, j int) bool { return w.fixes[i].idx < w.fixes[j].idx })
	drop := false
	for _, f := range w.fixes {
		if f.drop {
			drop = true
			if f.raced {
				w.raced = append(w.raced, Change{Op: OpUnstable, Path: w.entries[f.idx].Path, Type: TypeFile})
			}
			w.entries[f.idx].Type = 0
			continue
		}
		w.entries[f.idx] = f.e
	}
	w.fixes = nil
	if !drop {
		return
	}
	out := w.entries[:0]
	for _, e := range w.entries {
		if e.Type != 0 {
			out = append(out, e)
		}
	}
	w.entries = out
}

// copyFile copies a store file into a new inode of the snapshot and gives
// it the file's owner, mode and times through the new descriptor. A file
// that changes while it is copied is copied again, up to maxTries times,
// then kept as it was read and marked unstable. The copy is synced on p's
// syncers (syncClose): durable once p's wait returns nil.
func copyFile(p *pool, src, dst int, name string, e *Entry, buf *[]byte) error {
	if copyFault != nil {
		if err := copyFault(e.Path); err != nil {
			return fmt.Errorf("read %s: %w", EscapeName(e.Path), sourceError(err, "cannot be read"))
		}
	}
	sfd, err := openRead(src, name)
	if err == unix.ENOENT || err == unix.ELOOP {
		return errRaced
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", EscapeName(e.Path), sourceError(err, "cannot be opened"))
	}
	defer unix.Close(sfd)
	var before unix.Stat_t
	if err := unix.Fstat(sfd, &before); err != nil {
		return fmt.Errorf("stat %s: %w", EscapeName(e.Path), err)
	}
	if before.Mode&unix.S_IFMT != unix.S_IFREG || before.Ino != e.Ino {
		return errRaced
	}
	dfd, err := unix.Openat(dst, name, openNewFlags, 0o600)
	if err != nil {
		return fmt.Errorf("create %s in the snapshot: %w", EscapeName(e.Path), err)
	}
	if err := copyInto(sfd, dfd, before, e, buf); err != nil {
		unix.Close(dfd)
		return err
	}
	// Durable before the snapshot is renamed into place (finish, after
	// build's wait): the take syncs what it wrote, never the whole
	// filesystem.
	p.syncClose(dfd, e.Path)
	return nil
}

// copyInto is copyFile's copy: live file sfd (before is its stat) into
// new file dfd, again while it changes; then e is set from what was read
// and dfd given its metadata.
func copyInto(sfd, dfd int, before unix.Stat_t, e *Entry, buf *[]byte) error {
	stable := false
	for try := 0; try < maxTries && !stable; try++ {
		if try > 0 {
			if err := unix.Ftruncate(dfd, 0); err != nil {
				return fmt.Errorf("copy %s: %w", EscapeName(e.Path), err)
			}
		}
		if err := copyData(sfd, dfd, before.Size, buf); err != nil {
			return fmt.Errorf("copy %s: %w", EscapeName(e.Path), err)
		}
		if copyDuring != nil {
			copyDuring(e.Path)
		}
		var after unix.Stat_t
		if err := unix.Fstat(sfd, &after); err != nil {
			return fmt.Errorf("stat %s: %w", EscapeName(e.Path), err)
		}
		stable = after.Size == before.Size && after.Mtim == before.Mtim && after.Ctim == before.Ctim
		if !stable && try+1 < maxTries {
			before = after
		}
	}
	group := e.Group
	*e = entryOf(e.Path, &before)
	e.Group = group
	e.Unstable = !stable
	if err := applyMeta(dfd, e, before.Atim.Nano()); err != nil {
		return fmt.Errorf("%s in the snapshot: %w", EscapeName(e.Path), err)
	}
	return nil
}
