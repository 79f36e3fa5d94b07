package creds

import (
	"sync"
	"syscall"
	"time"
)

// fileCache keeps what a credential file held while the file stays the
// one read, so that a request costs one lstat instead of an open, two
// stats, reads and a close, and a rotated, rewritten, re-moded or removed
// file is read again (or refused) at the very next request, as Lookup
// promises.
//
// The file is named by everything a change alters: device, inode, size,
// mode, mtime and ctime. Timestamps are as coarse as the kernel's clock
// tick, so two writes within one tick look alike; a file is therefore
// cached only once it has settled, its ctime more than settle before the
// read began (git's "racy" rule): any later change then stamps a later
// ctime, and the identity differs. A file changed less than settle ago is
// read every time.
//
// What is kept is what the reader made of the file (V): a key, or pi's
// auth.json already parsed, so that a hit costs neither a conversion nor
// a parse.
type fileCache[V any] struct {
	mu sync.Mutex
	m  map[string]cachedFile[V]
}

type cachedFile[V any] struct {
	id  fileID
	val V
}

type fileID struct {
	dev, ino     uint64
	size         int64
	mode         uint32
	mtime, ctime int64 // ns
}

const settle = 2 * time.Second

// maxCached bounds the cache: paths come from org.toml and the vault's
// provider names, so a handful in practice.
const maxCached = 256

func idOf(st *syscall.Stat_t) fileID {
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino), size: st.Size, mode: st.Mode,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}

// get returns path's cached content when the file (not following a final
// symlink) is still the one it was read from.
func (c *fileCache[V]) get(path string) (V, bool) {
	c.mu.Lock()
	e, ok := c.m[path]
	c.mu.Unlock()
	var none V
	if !ok {
		return none, false
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return none, false
	}
	if idOf(&st) != e.id {
		return none, false
	}
	return e.val, true
}

// put records val as what path's content gave, read from the file whose
// fstat before the read was st, the read having begun at began; a file
// that had not settled by then is forgotten instead.
func (c *fileCache[V]) put(path string, st *syscall.Stat_t, began time.Time, val V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Unix(0, st.Ctim.Nano()).Add(settle).After(began) {
		delete(c.m, path)
		return
	}
	if c.m == nil || len(c.m) >= maxCached {
		c.m = map[string]cachedFile[V]{}
	}
	c.m[path] = cachedFile[V]{id: idOf(st), val: val}
}

// forget drops path (it failed a check, or is gone).
func (c *fileCache[V]) forget(path string) {
	c.mu.Lock()
	delete(c.m, path)
	c.mu.Unlock()
}
