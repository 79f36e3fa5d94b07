package snap

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The restore record.
//
// A restore gives the store new names for its files (links from the live
// tree, or new copies), and every new name or removed name bumps an
// inode's ctime. Take trusts a live file to be unchanged only when its
// inode and ctime are those its manifest recorded, so without more the
// first take after a restore would copy every file again, and list each
// as changed.
//
// So a restore ends by writing store-snapshots/.restored.jsonl: for every
// regular file it restored, the live inode and ctime it ended with, and
// the snapshot inode (sino) whose bytes that file holds. Snapshot inodes
// never change. The next take (and diff) trusts a live file whose inode
// and ctime still equal its record line, and links the previous
// snapshot's copy when that copy is the very inode the line names (and
// owner, mode, size and mtime agree): the bytes are provably the same.
// Anything else is compared as usual. The first take that makes a
// snapshot records the live inodes in its manifest and deletes the
// record.
//
// The record is a cache written by the host into the root-only snapshot
// folder: one that cannot be read is ignored (the take copies, as it
// would have without one) and replaced or deleted by the next restore or
// snapshot.

// recordName is the restore record's name in store-snapshots/.
const recordName = ".restored.jsonl"

// LabelRecord is the label in a restore record's header.
const LabelRecord = "restore-record"

// readRecord returns the restore record's entries indexed by path, or nil
// when there is none (or it cannot be used).
func (s *session) readRecord() map[string]*Entry {
	m := s.readRecordManifest()
	if m == nil {
		return nil
	}
	return index(m.Entries)
}

// readRecordManifest is the restore record whole (its header names the
// snapshot restored from), or nil.
func (s *session) readRecordManifest() *Manifest {
	if s.snaps < 0 {
		return nil
	}
	data, err := readFileAt(s.snaps, recordName)
	if err != nil {
		return nil
	}
	m, err := ParseManifest(data)
	if err != nil || m.Header.Label != LabelRecord {
		return nil
	}
	return m
}

// restoredBase is what the first take after a restore compares with to
// list a run's changes (docs/store.md: a restore's own changes belong to
// the restore, not to the next run): for each tree or path the restore
// put back (scope), the snapshot it came from, with each restored file as
// the record left it (its live inode and ctime); for everything else, the
// previous snapshot. A folder above a restored path that prev lacks is
// one the restore made on the way down to it: from's too. A record
// without a scope (an older one) names its trees by its files.
func restoredBase(prev, from, rec []Entry, scope []string) []Entry {
	if len(scope) == 0 {
		seen := map[string]bool{}
		for i := range rec {
			if t := treeOf(rec[i].Path); !seen[t] {
				seen[t] = true
				scope = append(scope, t)
			}
		}
	}
	restored := func(p string) bool {
		for _, r := range scope {
			if inTree(p, r) {
				return true
			}
		}
		return false
	}
	above := func(p string) bool {
		for _, r := range scope {
			if strings.HasPrefix(r, p+"/") {
				return true
			}
		}
		return false
	}
	byRec := index(rec)
	inPrev := map[string]bool{}
	var out []Entry
	for _, e := range prev {
		if !restored(e.Path) {
			out = append(out, e)
			inPrev[e.Path] = true
		}
	}
	for _, e := range from {
		if !restored(e.Path) && (!above(e.Path) || inPrev[e.Path]) {
			continue
		}
		if r := byRec[e.Path]; r != nil && e.Type == TypeFile && r.Type == TypeFile {
			e.Ino, e.Ctime = r.Ino, r.Ctime
		}
		out = append(out, e)
	}
	return out
}

// dropRecord deletes the restore record once a snapshot has recorded the
// live inodes itself.
func (s *session) dropRecord() error {
	err := unix.Unlinkat(s.snaps, recordName, 0)
	if err == unix.ENOENT {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", recordName, err)
	}
	return unix.Fsync(s.snaps)
}

// writeRecord replaces the restore record (atomically, durably).
func (s *session) writeRecord(from, pre string, at time.Time, scope []string, entries []Entry) error {
	m := &Manifest{Header: Header{Format: ManifestFormat, ID: from, TakenAt: at.UTC(), Label: LabelRecord, Prev: pre, Entries: len(entries), Scope: scope}, Entries: entries}
	tmp := recordName + ".tmp-" + strconv.Itoa(os.Getpid())
	unix.Unlinkat(s.snaps, tmp, 0)
	fd, err := unix.Openat(s.snaps, tmp, openNewFlags, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = m.WriteTo(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(s.snaps, tmp, s.snaps, recordName)
	}
	if err != nil {
		unix.Unlinkat(s.snaps, tmp, 0)
		return fmt.Errorf("write %s: %w", recordName, err)
	}
	return unix.Fsync(s.snaps)
}

// sameMeta reports whether two file entries agree on everything a reader
// sees but the bytes: type, mode, owner, size and mtime.
func sameMeta(a, b *Entry) bool {
	return a.Type == b.Type && a.Mode == b.Mode && a.UID == b.UID && a.GID == b.GID && a.Size == b.Size && a.Mtime == b.Mtime
}

// fromPrev reports whether the previous snapshot's copy of live file e
// (name in prevDir) holds e's bytes and metadata, so it can be linked:
// the usual case (the manifest's inode and ctime match), or by the
// restore record (viaRecord), whose snapshot inode is checked against
// prevDir's listing (inos: its getdents, as staging's folderInodes; nil,
// or a folder it could not list, an fstatat of the file). The listing
// gives the inode the folder's entry names, which is the one linkat
// links.
func (w *walker) fromPrev(prevDir int, name string, e *Entry, inos *folderInodes) (ok, viaRecord bool) {
	p := w.prev[e.Path]
	if p == nil || prevDir < 0 {
		return false, false
	}
	if sameContent(p, e) {
		return true, false
	}
	r := w.rec[e.Path]
	if r == nil || r.SnapIno == 0 || r.Ino != e.Ino || r.Ctime != e.Ctime || e.Type != TypeFile ||
		p.Unstable || !sameMeta(p, e) || !sameMeta(r, e) {
		return false, false
	}
	if ino, listed := inos.ino(name); listed {
		return ino == r.SnapIno, ino == r.SnapIno
	}
	var st unix.Stat_t
	if unix.Fstatat(prevDir, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Ino != r.SnapIno {
		return false, false
	}
	return true, true
}

// walkRoots walks the live trees with w (a scan or a look, never a
// build), stopping where a scan stops. With a restore record it opens
// snapshot prevID's folders beside the walk, for the record's checks.
func (s *session) walkRoots(w *walker, roots []root, prevID string) error {
	for _, r := range roots {
		prevRoot := -1
		if w.rec != nil {
			prevRoot = s.prevTree(prevID, r)
		}
		err := w.root(r.fd, r.path, r.store, -1, "", prevRoot)
		closeFd(prevRoot)
		if err != nil {
			return err
		}
	}
	return nil
}

// recordEntries stats every restored regular file now that its names
// and ctime are final (the old trees are deleted or in .trash/; a reused
// inode is only reused when no box is live, so its old name is deleted
// here, never later) and pairs it with the snapshot inode it was
// restored from. The stats run on a pool, one walker opening folders.
func (s *session) recordEntries(trees []restoreTree) ([]Entry, error) {
	p := newPool()
	var werr error
	for ti := range trees {
		if werr = s.recordTree(p, &trees[ti]); werr != nil {
			p.fail(werr)
			break
		}
	}
	if err := p.wait(); werr == nil {
		werr = err
	}
	if werr != nil {
		return nil, werr
	}
	var out []Entry
	for ti := range trees {
		t := &trees[ti]
		for i := range t.entries {
			if t.rec[i].SnapIno != 0 {
				out = append(out, t.rec[i])
			}
		}
		t.rec = nil
	}
	return out, nil
}

// recordTree fills t.rec (per entry: the restored file as it is now, with
// its snapshot inode) for every regular file with a known snapshot inode
// and the metadata the snapshot gave it.
func (s *session) recordTree(p *pool, t *restoreTree) error {
	t.rec = make([]Entry, len(t.entries))
	if e := &t.entries[0]; e.Type != TypeDir {
		// restore --path of one file (or symlink: nothing to record).
		var st unix.Stat_t
		if e.Type == TypeFile && t.sino[0] != 0 && unix.Fstatat(t.parent, t.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			if now := entryOf(e.Path, &st); sameMeta(&now, e) {
				now.SnapIno = t.sino[0]
				t.rec[0] = now
			}
		}
		return nil
	}
	root, err := openDirAt(t.parent, t.name)
	if err != nil {
		return err
	}
	// A folder's files are stat'ed on the pool in batches (one operation
	// per batchSize files, as staging queues them), not one each.
	type level struct {
		path string
		fd   int
		ref  *dirRef
		jobs []int
	}
	newLevel := func(path string, fd int) level {
		return level{path: path, fd: fd, ref: p.newDirRef(func(bool) error { unix.Close(fd); return nil })}
	}
	flush := func(l *level) {
		if len(l.jobs) == 0 {
			return
		}
		dir, jobs := l.fd, l.jobs
		l.jobs = nil
		l.ref.run(func(*[]byte) error {
			for _, i := range jobs {
				e := &t.entries[i]
				var st unix.Stat_t
				if unix.Fstatat(dir, e.Path[strings.LastIndexByte(e.Path, '/')+1:], &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
					continue
				}
				now := entryOf(e.Path, &st)
				if sameMeta(&now, e) {
					now.SnapIno = t.sino[i]
					t.rec[i] = now
				}
			}
			return nil
		})
	}
	pop := func(l *level) {
		flush(l)
		l.ref.release()
	}
	stack := []level{newLevel(t.path, root)}
	defer func() {
		for i := len(stack) - 1; i >= 0; i-- {
			pop(&stack[i])
		}
	}()
	for i := 1; i < len(t.entries); i++ {
		e := &t.entries[i]
		slash := strings.LastIndexByte(e.Path, '/')
		parent, name := e.Path[:slash], e.Path[slash+1:]
		for len(stack) > 1 && stack[len(stack)-1].path != parent {
			pop(&stack[len(stack)-1])
			stack = stack[:len(stack)-1]
		}
		top := &stack[len(stack)-1]
		if top.path != parent {
			return fmt.Errorf("%w: %s is not in walk order", ErrBadManifest, EscapeName(e.Path))
		}
		switch {
		case e.Type == TypeDir:
			fd, err := openDirAt(top.fd, name)
			if err != nil {
				return fmt.Errorf("open restored %s: %w", EscapeName(e.Path), err)
			}
			stack = append(stack, newLevel(e.Path, fd))
		case e.Type == TypeFile && t.sino[i] != 0:
			if top.jobs = append(top.jobs, i); len(top.jobs) >= batchSize {
				flush(top)
			}
		}
	}
	return nil
}
