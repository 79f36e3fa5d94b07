package snap

import (
	"runtime"
	"sync"
	"sync/atomic"
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

// wait runs what is queued, stops the goroutines and returns the first
// error. The pool cannot be used after.
func (p *pool) wait() error {
	close(p.ops)
	p.wg.Wait()
	return p.Err()
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
