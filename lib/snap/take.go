package snap

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// Result is what a take did.
type Result struct {
	ID        string // the new snapshot; "" when none was made
	Prev      string // the snapshot compared with ("" if none)
	Unchanged bool   // nothing changed since Prev: no snapshot
	Disabled  bool   // store.snapshots = 0: no snapshot
	NoStore   bool   // a sweep found no store (the worker never ran): no snapshot
	Changes   []Change
	Pruned    []string

	walked []Entry // the entries the take walked (a restore's live state)
}

// Take snapshots worker w's store and channel stores (docs/store.md, steps
// 1–7) under its store lock, held exclusively throughout.
func Take(ctx context.Context, w home.Worker, opt Options) (*Result, error) {
	if opt.Keep <= 0 {
		return &Result{Disabled: true}, nil
	}
	s, err := open(ctx, w, opt.Wait)
	if err != nil {
		return nil, err
	}
	defer s.close()
	r, err := s.takeAndPrune(ctx, &opt)
	s.noteTake(err, opt.now())
	return r, err
}

func (s *session) takeAndPrune(ctx context.Context, opt *Options) (*Result, error) {
	if err := s.cleanup(); err != nil {
		return nil, err
	}
	r, err := s.take(ctx, opt, "", false)
	if err != nil || r.ID == "" {
		return r, err
	}
	r.Pruned, err = s.prune(opt.Keep, opt)
	opt.mark("pruned")
	return r, err
}

// take makes one snapshot under the held lock. label "" is an ordinary
// snapshot; force makes one even when nothing changed (pre-restore).
func (s *session) take(ctx context.Context, opt *Options, label string, force bool) (*Result, error) {
	ids, err := s.ids()
	if err != nil {
		return nil, err
	}
	res := &Result{}
	prev := &Manifest{}
	if len(ids) > 0 {
		res.Prev = ids[len(ids)-1]
		if prev, err = s.manifest(res.Prev); err != nil {
			return nil, err
		}
	}
	byPath := index(prev.Entries)
	roots, closeRoots, err := s.roots()
	defer closeRoots()
	if err != nil {
		return nil, err
	}
	// The restore record, read once: its entries for the walks, its
	// header for the change list's base.
	rm := s.readRecordManifest()
	var rec map[string]*Entry
	if rm != nil {
		rec = index(rm.Entries)
	}
	total := -1
	if res.Prev != "" {
		total = len(prev.Entries)
	}
	if !force && res.Prev != "" {
		opt.phase(s.w.Name, "checking", total)
		changed, err := s.scan(roots, byPath, rec, res.Prev, opt.Progress)
		if err != nil {
			return nil, err
		}
		opt.mark("scanned")
		if !changed {
			res.Unchanged = true
			return res, nil
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.checkFree(opt.MinFree); err != nil {
		return nil, err
	}
	id, err := s.newID(opt.now(), res.Prev)
	if err != nil {
		return nil, err
	}
	partial := home.SnapPartialPrefix + id
	ok := false
	defer func() {
		if !ok {
			removeAt(s.snaps, partial) // best effort; the next run cleans up too
		}
	}()
	opt.phase(s.w.Name, "copying", total)
	walk, err := s.build(roots, partial, res.Prev, byPath, rec, opt.Progress)
	if err != nil {
		return nil, err
	}
	opt.mark("tree built")
	changes, restored := s.changesSince(res.Prev, prev, byPath, rm, walk)
	if !force && nothingNew(res.Prev, restored, changes, walk.entries) {
		res.Unchanged = true
		return res, nil
	}
	h := recount(Header{Format: ManifestFormat, ID: id, TakenAt: opt.now().UTC(), Label: label, Prev: res.Prev}, walk.entries)
	m := &Manifest{Header: h, Entries: walk.entries}
	if err := s.finish(partial, id, m, changes); err != nil {
		return nil, err
	}
	ok = true
	opt.mark("manifest written, renamed in")
	// The new manifest records the live inodes: a restore record has
	// served its turn. (Left behind, it is harmless: a file matching the
	// new manifest never consults it.)
	s.dropRecord()
	res.ID = id
	res.Changes = changes
	res.walked = walk.entries
	return res, nil
}

// changesSince is the new snapshot's change list: the walk against prev
// (snapshot prevID, byPath its index), or, when a restore put back
// another snapshot since prev was taken (its record rm), against what
// that restore put back (restored true), so the list says what changed
// after the restore.
func (s *session) changesSince(prevID string, prev *Manifest, byPath map[string]*Entry, rm *Manifest, walk *walker) (changes []Change, restored bool) {
	base, baseIdx := prev.Entries, byPath
	if rm != nil && rm.Header.ID != "" && rm.Header.ID != prevID {
		if from, err := s.manifest(rm.Header.ID); err == nil {
			base = restoredBase(prev.Entries, from.Entries, rm.Entries, rm.Header.Scope)
			baseIdx = index(base)
			restored = true
		}
	}
	changes = compare(base, baseIdx, walk.entries, false)
	return append(changes, walk.raced...), restored
}

// nothingNew reports whether the walked trees need no snapshot after all
// (prevID the newest, "" for none): they settled back to prev between the
// scan and the copy, or a first snapshot would record empty trees only
// (docs/store.md step 5, nothing changed, nothing written).
func nothingNew(prevID string, restored bool, changes []Change, walked []Entry) bool {
	if prevID == "" {
		return onlyEmptyRoots(walked)
	}
	// An empty list against a restore's base is no "unchanged": the scan
	// found the trees differ from prev (a restore put a file back), and
	// the snapshot records them, its list empty.
	return !restored && !anyChange(changes) && !anyRelinked(walked)
}

func anyChange(cs []Change) bool {
	for _, c := range cs {
		if c.Op != OpSkip {
			return true
		}
	}
	return false
}

// scan is the fast path: a stat walk compared with the previous manifest,
// stopping at the first difference. It copies nothing. With a restore
// record it also opens the previous snapshot's folders, to check the
// snapshot inodes the record names.
func (s *session) scan(roots []root, byPath, rec map[string]*Entry, prevID string, progress func(int)) (bool, error) {
	w := newWalker(byPath, false)
	w.progress = progress
	w.rec = rec
	w.dino = rec != nil && trustDirInodes(s.snaps)
	return s.scanParallel(w, roots, prevID)
}

// build makes the snapshot tree in .partial-ID: one walker in order, the
// per-file links and copies on a pool.
func (s *session) build(roots []root, partial, prevID string, byPath, rec map[string]*Entry, progress func(int)) (*walker, error) {
	if err := unix.Mkdirat(s.snaps, partial, 0o700); err != nil {
		return nil, fmt.Errorf("make %s: %w", partial, err)
	}
	pfd, err := openDirAt(s.snaps, partial)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	w := newWalker(byPath, true)
	// About as many entries as last time: one allocation, not a doubling
	// copy of a growing slice (which touched twice the memory).
	w.entries = make([]Entry, 0, len(byPath)+len(byPath)/8+16)
	w.rec = rec
	w.dino = rec != nil && trustDirInodes(s.snaps)
	w.snapFd = pfd
	w.progress = progress
	w.pool = newPool()
	chans := -1
	defer func() { closeFd(chans) }()
	err = func() error {
		for _, r := range roots {
			// The previous snapshot's copy of the tree: the walk owns it.
			prevRoot := s.prevTree(prevID, r)
			if r.store {
				if err := w.root(r.fd, r.path, true, pfd, home.SnapStoreDir, prevRoot); err != nil {
					return err
				}
				continue
			}
			if chans < 0 {
				if err := unix.Mkdirat(pfd, home.SnapChannelStoresDir, 0o700); err != nil {
					closeFd(prevRoot)
					return err
				}
				if chans, err = openDirAt(pfd, home.SnapChannelStoresDir); err != nil {
					closeFd(prevRoot)
					return err
				}
			}
			if err := w.root(r.fd, r.path, false, chans, r.name, prevRoot); err != nil {
				return err
			}
		}
		if chans >= 0 { // its entries, the channel stores' folders, are made
			if err := unix.Fsync(chans); err != nil {
				return fmt.Errorf("sync %s in the snapshot: %w", home.SnapChannelStoresDir, err)
			}
		}
		return nil
	}()
	// Every queued operation finishes (or is skipped after a failure)
	// before the folders they use are closed.
	if perr := w.pool.wait(); err == nil {
		err = perr
	}
	w.pool = nil
	if err != nil {
		return nil, err
	}
	w.applyFixes()
	return w, nil
}

// finish writes the manifest and the change list into the partial
// snapshot, makes them durable and renames it into place. build has made
// the tree itself durable.
func (s *session) finish(partial, id string, m *Manifest, changes []Change) error {
	pfd, err := openDirAt(s.snaps, partial)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := writeNewFrom(pfd, home.SnapManifest, m.WriteTo); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	if err := writeNew(pfd, home.SnapChanges, ChangeList(changes)); err != nil {
		return fmt.Errorf("write change list: %w", err)
	}
	// The durability order, which a crash at any instant relies on:
	//  1. every new copy and every folder of the tree: fsynced on the
	//     pool's syncers, many at once (copyFile, finishDir), all done
	//     before build's wait returned, before this function runs;
	//  2. the manifest, then the change list, each fsynced as written;
	//  3. the snapshot's own folder (their names);
	//  4. the rename that publishes the snapshot, then its parent folder.
	// Until 4 the snapshot is a .partial folder that the next take deletes;
	// after it everything the manifest names is on disk. Only what the
	// take wrote is synced, never the filesystem (syncfs would wait for
	// every other writer's data).
	if err := unix.Fsync(pfd); err != nil {
		return fmt.Errorf("sync snapshot: %w", err)
	}
	if err := unix.Renameat2(s.snaps, partial, s.snaps, id, unix.RENAME_NOREPLACE); err != nil {
		return fmt.Errorf("rename %s into place: %w", partial, err)
	}
	if err := unix.Fsync(s.snaps); err != nil {
		return fmt.Errorf("sync %s: %w", s.w.Snapshots(), err)
	}
	return nil
}

// ChangeList formats changes as the change-list file (one line each).
func ChangeList(cs []Change) []byte {
	var b []byte
	for i := range cs {
		b = append(b, cs[i].Line()...)
		b = append(b, '\n')
	}
	return b
}

// writeNew writes a new file in dir (it must not exist), mode 0600.
func writeNew(dir int, name string, data []byte) error {
	return writeNewFrom(dir, name, func(w io.Writer) (int64, error) {
		n, err := w.Write(data)
		return int64(n), err
	})
}

// writeNewFrom writes a new file in dir (it must not exist), mode 0600,
// with what write gives it, and syncs it.
func writeNewFrom(dir int, name string, write func(io.Writer) (int64, error)) error {
	fd, err := unix.Openat(dir, name, openNewFlags, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	_, err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// newID picks the id of a new snapshot: its time, made later than the
// previous one (and unused) if the clock says otherwise.
func (s *session) newID(now time.Time, prev string) (string, error) {
	id := home.NewSnapshotID(now)
	if prev != "" && id <= prev {
		t, err := home.SnapshotTime(prev)
		if err != nil {
			return "", err
		}
		id = home.NewSnapshotID(t.Add(time.Millisecond))
	}
	for i := 0; i < 1000; i++ {
		var st unix.Stat_t
		if unix.Fstatat(s.snaps, id, &st, unix.AT_SYMLINK_NOFOLLOW) == unix.ENOENT {
			return id, nil
		}
		t, _ := home.SnapshotTime(id)
		id = home.NewSnapshotID(t.Add(time.Millisecond))
	}
	return "", fmt.Errorf("no free snapshot id near %s", id)
}

func (s *session) checkFree(min int64) error {
	if min <= 0 {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(s.snaps, &st); err != nil {
		return nil
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	if free < min {
		return errs.WithHint(fmt.Errorf("worker %q: snapshot skipped: %d bytes free on the data tree's filesystem, store.min_free is %d%w",
			s.w.Name, free, min, lowDisk), "free some space (roster-snap prune, roster-runs prune) or lower [storage] store.min_free")
	}
	if want := min / config.InodeBytes; st.Files > 0 && int64(st.Ffree) < want {
		return errs.WithHint(fmt.Errorf("worker %q: snapshot skipped: %d inodes free on the data tree's filesystem, store.min_free of %d bytes wants %d (one per %d bytes)%w",
			s.w.Name, st.Ffree, min, want, config.InodeBytes, lowDisk), "remove files (roster-snap prune, roster-runs prune) or lower [storage] store.min_free")
	}
	return nil
}

// onlyEmptyRoots reports whether a walk found nothing but the trees' own
// top folders (an empty store, empty channel stores).
func onlyEmptyRoots(entries []Entry) bool {
	for _, e := range entries {
		if e.Type != TypeDir {
			return false
		}
		rest, ok := strings.CutPrefix(e.Path, home.SnapChannelStoresDir+"/")
		if e.Path != home.SnapStoreDir && (!ok || strings.Contains(rest, "/")) {
			return false
		}
	}
	return true
}

// anyRelinked reports whether a file kept its bytes but not its inode or
// ctime (a no-op chown -R, a restore's new names): nothing to list, but
// the snapshot is written all the same, with an empty change list, so that
// its manifest records the new inodes and the next take is a stat walk
// again instead of a copy and compare of every such file.
func anyRelinked(es []Entry) bool {
	for i := range es {
		if es[i].samePrev {
			return true
		}
	}
	return false
}
