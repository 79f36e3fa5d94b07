package snap

import (
	"context"
	"errors"
	"fmt"
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
	Keep     int            // store.snapshots: complete snapshots kept; 0 = take none
	Daily    int            // store.daily: also the newest of each of the last Daily local days with one
	Zone     *time.Location // whose days Daily counts (the host zone); nil = config.SystemZone()
	UndoDays int            // store.undo_days: pre-restore snapshots kept this long; 0 = until removed by hand
	MinFree  int64          // store.min_free: below this many free bytes, take nothing
	Wait     time.Duration  // for the store lock (0 = DefaultWait; fsx.Forever)
	Now      func() time.Time
	Progress func(n int) // called as entries are walked (nil: nothing)
	// Phase is called as each walk starts (nil: nothing): a progress
	// display restarts its count there, with the walk's total (an
	// estimate for a take: the previous snapshot's entries; -1: unknown).
	Phase func(Phase)
	// Trace is called as a take or a restore finishes each of its steps
	// (nil: nothing), with the step's name: `ROSTER_SNAP_TRACE=1
	// roster-snap` prints when each was passed, to show where the time
	// goes (roster-snap(1)).
	Trace func(step string)
}

// Phase is one walk of a take or a restore, for progress.
type Phase struct {
	Worker string
	What   string // "checking" (is anything changed?), "copying" (a take), "restoring"
	Total  int    // entries expected; -1: unknown
}

func (o *Options) phase(worker, what string, total int) {
	if o.Phase != nil {
		o.Phase(Phase{Worker: worker, What: what, Total: total})
	}
}

// mark reports a step passed to o.Trace.
func (o *Options) mark(step string) {
	if o.Trace != nil {
		o.Trace(step)
	}
}

func (o *Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
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
	if s.snaps, err = openDirAt(s.wdir, home.SnapshotsDir); err != nil {
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
	if s.snaps, err = openDirAt(s.wdir, home.SnapshotsDir); err != nil {
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

// manifest reads snapshot id's manifest; unreadable is a refusal (exit 14).
func (s *session) manifest(id string) (*Manifest, error) {
	data, err := readFileAt(s.snaps, id, home.SnapManifest)
	if err != nil {
		return nil, errs.New(errs.ErrRefused, fmt.Sprintf("snapshot %s: read manifest: %v", id, err))
	}
	m, err := ParseManifest(data)
	if err != nil {
		return nil, errs.WithHint(errs.New(errs.ErrRefused, fmt.Sprintf("%s: %v", s.w.SnapshotManifest(id), err)),
			"move that snapshot folder out of "+home.SnapshotsDir+"/ (or delete it) to take snapshots again")
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
	// First what a killed restore was to keep (restore_keep.go), before
	// the tree at its staging name is deleted below.
	keep, err := s.readKeep()
	if err != nil {
		return err
	}
	if keep != nil {
		if err := s.keepMoves(keep); err != nil {
			return err
		}
	}
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
	fd, err := openDirAt(s.wdir, home.StoreDir)
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
