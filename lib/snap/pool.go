package snap

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A pool runs the slow per-file system calls of a take, a restore or a
// delete (linkat, a copy, unlinkat) on a few goroutines while one walker
// goes on reading folders in order. On ext4 two link or unlink calls in
// different folders proceed in parallel, so this is most of the speed on
// a machine with more than one core. The walker keeps every decision that
// depends on order (hardlink groups, the manifest's order); the pool only
// runs independent operations.
//
// The queue is bounded, so the walker never runs far ahead: the folders
// it keeps open while their operations wait stay few (an operation is a
// folder's batch of files; each keeps up to five descriptors open, so a
// few per worker keep every worker busy and the whole well under a
// 1024-descriptor limit).
type pool struct {
	ops    chan func(buf *[]byte) error
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error
	failed atomic.Bool

	// The syncers (see syncClose), started on first use.
	syncOnce sync.Once
	syncs    chan syncItem
	syncWg   sync.WaitGroup
}

// syncItem is a new file or folder to fsync, then close.
type syncItem struct {
	fd   int
	path string // for an error: the entry's path in the manifest
}

// poolWorkers is how many goroutines run operations: the cores, at least
// two (one core still overlaps a walker's stat with another's link), at
// most eight (beyond that the filesystem's own locks are the limit).
func poolWorkers() int {
	n := runtime.GOMAXPROCS(0)
	if n < 2 {
		n = 2
	}
	if n > 8 {
		n = 8
	}
	return n
}

func newPool() *pool {
	n := poolWorkers()
	p := &pool{ops: make(chan func(*[]byte) error, 4*n)}
	p.wg.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			defer p.wg.Done()
			var buf []byte // this goroutine's copy buffer (read/write fallback only)
			for op := range p.ops {
				if err := op(&buf); err != nil {
					p.fail(err)
				}
			}
		}()
	}
	return p
}

// fail records the first error; later operations are skipped (their
// folder references are still released).
func (p *pool) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
	p.failed.Store(true)
}

// Err is the first error an operation returned (nil so far).
func (p *pool) Err() error {
	if !p.failed.Load() {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// wait runs what is queued, then every sync queued (an operation, or the
// last release of a folder's dirRef, may queue one until the operations
// are done), stops the goroutines and returns the first error. When it
// returns nil, every descriptor given to syncClose was synced. The pool
// cannot be used after.
func (p *pool) wait() error {
	close(p.ops)
	p.wg.Wait()
	p.syncOnce.Do(func() {}) // no syncer starts from here on
	if p.syncs != nil {
		close(p.syncs)
		p.syncWg.Wait()
	}
	return p.Err()
}

// syncClose fsyncs new file or folder fd (path names it in an error) and
// closes it, on one of many syncer goroutines, and returns at once (or
// when a syncer is free to take it). It must be called before wait.
//
// Why many: a take or a restore makes a few thousand new inodes (the
// copies, every folder of the new tree), and each fsync waits for a
// device flush. One after another they cost more than one syncfs(2) of the
// whole filesystem; many in flight at once, the block layer merges their
// writes and flushes and the lot costs about one syncfs, while syncing
// only what this take wrote (a syncfs would also wait for every other
// writer's dirty data). Each copy's writeback is not started early with
// sync_file_range(SYNC_FILE_RANGE_WRITE): a profile of a restore showed it
// submits the writeback in the calling goroutine (0.85 s of 10 s of CPU),
// which is the pool's, the one the walk waits for; in a syncer the fsync
// does that work off the walk's path.
//
// After a failure the descriptor is only closed.
func (p *pool) syncClose(fd int, path string) {
	p.syncOnce.Do(p.startSyncers)
	p.syncs <- syncItem{fd: fd, path: path}
}

// syncers is how many fsyncs are in flight at most: enough for the device
// to merge them (measured on ext4 over virtio: 2 in flight take 3.5 times
// as long as 32, 128 no better than 32), and few enough that what they
// hold open (a descriptor each, as many again queued) stays well inside
// the descriptor limit beside the pool's folders.
func syncers() int {
	n := 32
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil && rl.Cur < 1024 {
		n = int(rl.Cur / 16) // 256 descriptors: 16 syncers, 32 descriptors
		if n < 2 {
			n = 2
		}
	}
	return n
}

func (p *pool) startSyncers() {
	n := syncers()
	p.syncs = make(chan syncItem, n)
	p.syncWg.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			defer p.syncWg.Done()
			for it := range p.syncs {
				if !p.failed.Load() {
					if err := unix.Fsync(it.fd); err != nil {
						p.fail(fmt.Errorf("sync %s: %w", EscapeName(it.path), err))
					}
				}
				unix.Close(it.fd)
			}
		}()
	}
}

// finishDir ends a new folder fd of a take or a restore once every entry
// is made in it: it gets e's metadata (atime: its atime) and goes to the
// syncers, which sync and close it; after a failure it is only closed.
func (p *pool) finishDir(fd int, e *Entry, atime int64, failed bool) error {
	if failed {
		unix.Close(fd)
		return nil
	}
	if err := applyMeta(fd, e, atime); err != nil {
		unix.Close(fd)
		return err
	}
	p.syncClose(fd, e.Path)
	return nil
}

// dirRef counts what still uses one folder's descriptors: the walker while
// it reads the folder, and each queued operation on an entry in it. The
// last release runs finish (the folder's own metadata, which must come
// after its entries are made, and closing its descriptors).
type dirRef struct {
	p      *pool
	n      atomic.Int32
	finish func(failed bool) error
}

// newDirRef returns a reference held once (by the walker).
func (p *pool) newDirRef(finish func(failed bool) error) *dirRef {
	d := &dirRef{p: p, finish: finish}
	d.n.Store(1)
	return d
}

func (d *dirRef) release() {
	if d.n.Add(-1) == 0 {
		if err := d.finish(d.p.failed.Load()); err != nil {
			d.p.fail(err)
		}
	}
}

// run queues op on the pool as a user of folder d. Once the pool has
// failed, op is skipped.
func (d *dirRef) run(op func(buf *[]byte) error) {
	d.n.Add(1)
	d.p.ops <- func(buf *[]byte) error {
		defer d.release()
		if d.p.failed.Load() {
			return nil
		}
		return op(buf)
	}
}
