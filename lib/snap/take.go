package snap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
)

// DefaultWait is how long take, restore and prune wait for the store lock.
const DefaultWait = 60 * time.Second

// NoWait as Options.Wait tries the store lock once (--wait 0).
const NoWait time.Duration = -3

// Options tune take, restore and prune.
type Options struct {
	Keep     int           // store.snapshots: complete snapshots kept; 0 = take none
	MinFree  int64         // store.min_free: below this many free bytes, take nothing
	Wait     time.Duration // for the store lock (0 = DefaultWait; fsx.Forever)
	Now      func() time.Time
	Progress func(n int) // called as entries are walked (nil: nothing)
}

func (o *Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// Result is what a take did.
type Result struct {
	ID        string // the new snapshot; "" when none was made
	Prev      string // the snapshot compared with ("" if none)
	Unchanged bool   // nothing changed since Prev: no snapshot
	Disabled  bool   // store.snapshots = 0: no snapshot
	Changes   []Change
	Pruned    []string

	walked []Entry // the entries the take walked (a restore's live state)
}

// session is a worker's snapshot folder opened under the store lock.
type session struct {
	w      home.Worker
	lock   *os.File
	wdir   int // the worker's folder
	snaps  int // store-snapshots/
	closed bool
}

func (s *session) close() {
	if s.closed {
		return
	}
	s.closed = true
	if s.snaps >= 0 {
		unix.Close(s.snaps)
	}
	if s.wdir >= 0 {
		unix.Close(s.wdir)
	}
	if s.lock != nil {
		s.lock.Close() // releases the flock
	}
}

// open checks the worker exists, takes its store lock exclusively (waiting
// at most wait) and opens its snapshot folder (made mode 0700 if missing).
func open(ctx context.Context, w home.Worker, wait time.Duration) (*session, error) {
	if err := w.MustExist(); err != nil {
		return nil, err
	}
	if wait == noLock {
		return openUnlocked(w)
	}
	switch wait {
	case 0:
		wait = DefaultWait
	case NoWait:
		wait = 0 // one try
	}
	locks, err := fsx.OpenDir(w.Locks())
	if err != nil {
		return nil, fmt.Errorf("worker %q: lock folder: %w", w.Name, err)
	}
	lf, err := fsx.OpenLockFile(locks, home.StoreLockName)
	locks.Close()
	if err != nil {
		return nil, fmt.Errorf("worker %q: %w", w.Name, err)
	}
	if err := fsx.Flock(ctx, lf, false, wait); err != nil {
		lf.Close()
		if errors.Is(err, errs.ErrBusy) {
			return nil, errs.WithHint(errs.New(errs.ErrBusy, fmt.Sprintf("worker %q: store busy (its store lock is still held after %s)", w.Name, wait)),
				"a box holds `roster-lock store`; try again later or give a longer --wait")
		}
		return nil, err
	}
	s := &session{w: w, lock: lf, wdir: -1, snaps: -1}
	if s.wdir, err = openDirAt(unix.AT_FDCWD, w.Dir); err != nil {
		s.close()
		return nil, fmt.Errorf("open %s: %w", w.Dir, err)
	}
	if err := fsx.MkdirDurable(w.Snapshots(), 0o700); err != nil {
		s.close()
		return nil, fmt.Errorf("make %s: %w", w.Snapshots(), err)
	}
	if s.snaps, err = openDirAt(s.wdir, "store-snapshots"); err != nil {
		s.close()
		return nil, fmt.Errorf("open %s: %w", w.Snapshots(), err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(s.snaps, &st); err == nil && st.Mode&0o7777 != 0o700 {
		unix.Fchmod(s.snaps, 0o700)
	}
	return s, nil
}

// noLock opens a session for reading only (ls, diff): no store lock.
const noLock time.Duration = -2

func openUnlocked(w home.Worker) (*session, error) {
	s := &session{w: w, wdir: -1, snaps: -1}
	var err error
	if s.wdir, err = openDirAt(unix.AT_FDCWD, w.Dir); err != nil {
		return nil, fmt.Errorf("open %s: %w", w.Dir, err)
	}
	if s.snaps, err = openDirAt(s.wdir, "store-snapshots"); err != nil {
		if err != unix.ENOENT {
			s.close()
			return nil, fmt.Errorf("open %s: %w", w.Snapshots(), err)
		}
	}
	return s, nil
}

// ids lists the complete snapshots, oldest first.
func (s *session) ids() ([]string, error) {
	if s.snaps < 0 {
		return nil, nil
	}
	names, err := readNames(s.snaps, make([]byte, 8<<10), nil)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", s.w.Snapshots(), err)
	}
	var ids []string
	for _, n := range names {
		if home.IsSnapshotID(n) {
			ids = append(ids, n)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// readFileAt reads a host-written file below dir (no symlinks followed).
func readFileAt(dir int, names ...string) ([]byte, error) {
	cur := dir
	for i, n := range names {
		if i == len(names)-1 {
			fd, err := openRead(cur, n)
			if cur != dir {
				unix.Close(cur)
			}
			if err != nil {
				return nil, err
			}
			f := os.NewFile(uintptr(fd), n)
			defer f.Close()
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				return nil, err
			}
			// One read into a buffer of the right size (a manifest can be
			// tens of MB: no growing and copying).
			b := make([]byte, 0, st.Size+1)
			for {
				n, err := f.Read(b[len(b):cap(b)])
				b = b[:len(b)+n]
				if err == io.EOF {
					return b, nil
				}
				if err != nil {
					return nil, err
				}
				if len(b) == cap(b) {
					b = append(b, 0)[:len(b)] // it grew since the stat
				}
			}
		}
		fd, err := openDirAt(cur, n)
		if cur != dir {
			unix.Close(cur)
		}
		if err != nil {
			return nil, err
		}
		cur = fd
	}
	return nil, os.ErrInvalid
}

// manifest reads snapshot id's manifest; unreadable is a refusal (exit 14).
func (s *session) manifest(id string) (*Manifest, error) {
	data, err := readFileAt(s.snaps, id, home.SnapManifest)
	if err != nil {
		return nil, errs.New(errs.ErrRefused, fmt.Sprintf("snapshot %s: read manifest: %v", id, err))
	}
	m, err := ParseManifest(data)
	if err != nil {
		return nil, errs.WithHint(errs.New(errs.ErrRefused, fmt.Sprintf("%s: %v", s.w.SnapshotManifest(id), err)),
			"move that snapshot folder out of store-snapshots/ (or delete it) to take snapshots again")
	}
	return m, nil
}

// liveBoxes reports whether a box of the worker may be running.
func (s *session) liveBoxes() bool {
	live, err := runs.LiveBoxes(s.w)
	return err != nil || len(live) > 0 // unknown counts as live: never delete under a box
}

// cleanup finishes what an interrupted run left: .partial-* snapshots,
// .trash/ contents, and restore staging trees. Trees a box may still have
// mounted (old stores, staging) wait until no box of the worker is live.
func (s *session) cleanup() error {
	names, err := readNames(s.snaps, make([]byte, 8<<10), nil)
	if err != nil {
		return err
	}
	for _, n := range names {
		if strings.HasPrefix(n, home.SnapPartialPrefix) || strings.HasPrefix(n, recordName+".tmp-") {
			if err := removeAt(s.snaps, n); err != nil {
				return fmt.Errorf("remove leftover %s: %w", n, err)
			}
		}
	}
	live := -1
	isLive := func() bool {
		if live < 0 {
			live = 0
			if s.liveBoxes() {
				live = 1
			}
		}
		return live == 1
	}
	if trash, err := openDirAt(s.snaps, home.SnapTrash); err == nil {
		defer unix.Close(trash)
		tn, err := readNames(trash, make([]byte, 8<<10), nil)
		if err != nil {
			return err
		}
		for _, n := range tn {
			if strings.HasPrefix(n, oldTreePrefix) && isLive() {
				continue
			}
			if err := removeAt(trash, n); err != nil {
				return fmt.Errorf("empty %s: %w", home.SnapTrash, err)
			}
		}
	}
	wn, err := readNames(s.wdir, make([]byte, 8<<10), nil)
	if err != nil {
		return err
	}
	for _, n := range wn {
		if strings.HasPrefix(n, home.RestorePrefix) && !isLive() {
			if err := removeAt(s.wdir, n); err != nil {
				return fmt.Errorf("remove leftover %s: %w", n, err)
			}
		}
	}
	return nil
}

// oldTreePrefix names, in .trash/, a store tree that a forced restore
// replaced while a box was live.
const oldTreePrefix = "old-"

// root is one tree a snapshot holds: the store or a channel store.
type root struct {
	path  string // in the snapshot: "store", "channel-stores/ENC"
	name  string // its last component
	fd    int
	store bool
}

// roots opens the store and every channel store.
func (s *session) roots() ([]root, func(), error) {
	var rs []root
	done := func() {
		for _, r := range rs {
			unix.Close(r.fd)
		}
	}
	fd, err := openDirAt(s.wdir, "store")
	if err == unix.ENOENT {
		return nil, done, errs.WithHint(fmt.Errorf("worker %q has no store folder (%s)", s.w.Name, s.w.Store()),
			"`roster-snap restore "+s.w.Name+"` puts back the newest snapshot's")
	}
	if err != nil {
		return nil, done, fmt.Errorf("open %s: %w", s.w.Store(), err)
	}
	rs = append(rs, root{path: home.SnapStoreDir, name: home.SnapStoreDir, fd: fd, store: true})
	cs, err := openDirAt(s.wdir, home.SnapChannelStoresDir)
	if err == unix.ENOENT {
		return rs, done, nil
	}
	if err != nil {
		return nil, done, fmt.Errorf("open %s: %w", s.w.ChannelStores(), err)
	}
	defer unix.Close(cs)
	names, err := readNames(cs, make([]byte, 8<<10), nil)
	if err != nil {
		return nil, done, err
	}
	sort.Strings(names)
	for _, n := range names {
		if _, err := home.DecodeChannel(n); err != nil {
			continue // not a channel store (a restore's staging, a stray file)
		}
		fd, err := openDirAt(cs, n)
		if err != nil {
			continue // not a folder
		}
		rs = append(rs, root{path: home.SnapChannelStoresDir + "/" + n, name: n, fd: fd})
	}
	return rs, done, nil
}

// prevTree opens root r's tree in snapshot id (a new descriptor the
// caller owns); -1 when there is no such snapshot or tree.
func (s *session) prevTree(id string, r root) int {
	if id == "" {
		return -1
	}
	snap, err := openDirAt(s.snaps, id)
	if err != nil {
		return -1
	}
	defer unix.Close(snap)
	fd, err := openPath(snap, r.path)
	if err != nil {
		return -1
	}
	return fd
}

// Take snapshots worker w's store and channel stores (store.md, steps
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
	if err := s.cleanup(); err != nil {
		return nil, err
	}
	r, err := s.take(ctx, &opt, "", false)
	if err != nil || r.ID == "" {
		return r, err
	}
	r.Pruned, err = s.prune(opt.Keep)
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
	rec := s.readRecord()
	if !force && res.Prev != "" {
		changed, err := s.scan(roots, byPath, rec, res.Prev, opt.Progress)
		if err != nil {
			return nil, err
		}
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
	walk, err := s.build(roots, partial, res.Prev, byPath, rec, opt.Progress)
	if err != nil {
		return nil, err
	}
	changes := compare(prev.Entries, byPath, walk.entries, false)
	changes = append(changes, walk.raced...)
	if !force && res.Prev != "" && !anyChange(changes) {
		res.Unchanged = true // it settled back between the scan and the copy
		return res, nil
	}
	if !force && res.Prev == "" && onlyEmptyRoots(walk.entries) {
		// A first snapshot of empty trees would record nothing: store.md
		// step 5, nothing changed, nothing written.
		res.Unchanged = true
		return res, nil
	}
	h := Header{Format: ManifestFormat, ID: id, TakenAt: opt.now().UTC(), Label: label, Prev: res.Prev,
		Entries: len(walk.entries)}
	seen := map[int]bool{}
	for i := range walk.entries {
		e := &walk.entries[i]
		switch {
		case e.Type == TypeFile:
			h.Files++
			if e.Group == 0 || !seen[e.Group] {
				h.Bytes += e.Size
				seen[e.Group] = e.Group != 0
			}
		case special(e.Type):
			h.Skipped++
		}
		if e.Unstable {
			h.Unstable++
		}
	}
	m := &Manifest{Header: h, Entries: walk.entries}
	if err := s.finish(partial, id, m, changes); err != nil {
		return nil, err
	}
	ok = true
	// The new manifest records the live inodes: a restore record has
	// served its turn. (Left behind, it is harmless: a file matching the
	// new manifest never consults it.)
	s.dropRecord()
	res.ID = id
	res.Changes = changes
	res.walked = walk.entries
	return res, nil
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
	w.rec = rec
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
// snapshot, makes everything durable and renames it into place.
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
	// One syncfs makes every new file and folder of the snapshot durable
	// (cheaper than an fsync per file, and as strong) before the rename.
	if err := unix.Syncfs(pfd); err != nil {
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
// with what write gives it.
func writeNewFrom(dir int, name string, write func(io.Writer) (int64, error)) error {
	fd, err := unix.Openat(dir, name, openNewFlags, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	_, err = write(f)
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
		return errs.WithHint(fmt.Errorf("worker %q: snapshot skipped: %d bytes free on the data tree's filesystem, store.min_free is %d",
			s.w.Name, free, min), "free some space (roster-snap prune, roster-runs prune) or lower [storage] store.min_free")
	}
	return nil
}

// prune keeps the newest keep complete snapshots. A pre-restore snapshot
// newer than every ordinary one is not counted (nor pruned) until the next
// ordinary snapshot; the newest snapshot is never pruned. Victims are
// renamed into .trash/ first, then deleted.
func (s *session) prune(keep int) ([]string, error) {
	ids, err := s.ids()
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	newestOrdinary := ""
	labels := make([]string, len(ids))
	for i, id := range ids {
		h, err := s.checkShape(id)
		if err != nil {
			// Keeping "the newest N" is only sound when every snapshot can be
			// read: an unreadable one could be counted as a restore point
			// while the good ones go. Refuse, delete nothing.
			return nil, errs.WithHint(fmt.Errorf("snapshot %s: its manifest cannot be read (%v); nothing pruned: %w", id, err, errs.ErrRefused),
				"look at "+home.SnapManifest+" of that snapshot; move the snapshot out of store-snapshots/ once it is understood")
		}
		labels[i] = h.Label
		if labels[i] != LabelPreRestore {
			newestOrdinary = id
		}
	}
	var counted []string
	for i, id := range ids {
		if labels[i] == LabelPreRestore && id > newestOrdinary {
			continue
		}
		counted = append(counted, id)
	}
	if keep < 0 {
		keep = 0
	}
	if len(counted) <= keep {
		return nil, nil
	}
	victims := counted[:len(counted)-keep]
	if len(victims) > 0 && victims[len(victims)-1] == ids[len(ids)-1] {
		victims = victims[:len(victims)-1] // never the newest
	}
	if len(victims) == 0 {
		return nil, nil
	}
	trash, err := s.trash()
	if err != nil {
		return nil, err
	}
	defer unix.Close(trash)
	for _, v := range victims {
		if err := unix.Renameat(s.snaps, v, trash, v); err != nil {
			return nil, fmt.Errorf("move snapshot %s to %s: %w", v, home.SnapTrash, err)
		}
	}
	if err := unix.Fsync(s.snaps); err != nil {
		return nil, err
	}
	for _, v := range victims {
		if err := removeAt(trash, v); err != nil {
			return victims, fmt.Errorf("delete pruned snapshot %s: %w", v, err)
		}
	}
	return victims, nil
}

func (s *session) trash() (int, error) {
	if err := unix.Mkdirat(s.snaps, home.SnapTrash, 0o700); err != nil && err != unix.EEXIST {
		return -1, fmt.Errorf("make %s: %w", home.SnapTrash, err)
	}
	return openDirAt(s.snaps, home.SnapTrash)
}

// Prune keeps the newest keep snapshots of w (store.md step 6), under the
// store lock.
func Prune(ctx context.Context, w home.Worker, keep int, opt Options) ([]string, error) {
	s, err := open(ctx, w, opt.Wait)
	if err != nil {
		return nil, err
	}
	defer s.close()
	if err := s.cleanup(); err != nil {
		return nil, err
	}
	return s.prune(keep)
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

// checkShape reads snapshot id's header and checks its manifest's shape
// without parsing every entry: it ends with a newline, holds exactly the
// header's count of entry lines, and each is one JSON object. Prune runs
// it on every snapshot after each take, so it maps the file (one open, no
// copy) and finds line ends with IndexByte; take, diff and restore parse
// the manifests they use whole.
func (s *session) checkShape(id string) (Header, error) {
	fd, err := openDirAt(s.snaps, id)
	if err != nil {
		return Header{}, err
	}
	mfd, err := openRead(fd, home.SnapManifest)
	unix.Close(fd)
	if err != nil {
		return Header{}, err
	}
	defer unix.Close(mfd)
	var st unix.Stat_t
	if err := unix.Fstat(mfd, &st); err != nil {
		return Header{}, err
	}
	if st.Size == 0 {
		return Header{}, fmt.Errorf("%w: empty", ErrBadManifest)
	}
	data, err := unix.Mmap(mfd, 0, int(st.Size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return Header{}, err
	}
	defer unix.Munmap(data)
	return shapeOf(data)
}

// shapeOf is checkShape on a manifest's bytes.
func shapeOf(data []byte) (Header, error) {
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 {
		return Header{}, fmt.Errorf("%w: no header line", ErrBadManifest)
	}
	h, err := ParseHeader(data[:nl])
	if err != nil {
		return h, err
	}
	lines := 0
	for rest := data[nl+1:]; len(rest) > 0; lines++ {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return h, fmt.Errorf("%w: torn last line", ErrBadManifest)
		}
		if i < 2 || rest[0] != '{' || rest[i-1] != '}' {
			return h, fmt.Errorf("%w: line %d is not a JSON object", ErrBadManifest, lines+2)
		}
		rest = rest[i+1:]
	}
	if lines != h.Entries {
		return h, fmt.Errorf("%w: %d entry lines, the header says %d", ErrBadManifest, lines, h.Entries)
	}
	return h, nil
}
