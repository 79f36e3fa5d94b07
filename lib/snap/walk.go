package snap

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/home"
)

// maxDepth bounds how deep a store may nest folders: the walk keeps one
// descriptor per level open (source, snapshot, previous snapshot), so a
// folder deeper than that in a hostile store is not walked: it is listed
// skipped (reasonTooDeep) and the take goes on with the rest.
const maxDepth = 1000

// reasonTooDeep is the skip reason of a folder below maxDepth levels.
var reasonTooDeep = fmt.Sprintf("nested deeper than %d folders", maxDepth)

// skipError is a store file or folder the take cannot read (docs/store.md,
// "uncopyable"): the source's own failure, never the snapshot's. The
// entry is listed skipped with the reason and the take goes on.
type skipError struct {
	reason string
	err    error
}

func (e *skipError) Error() string { return e.err.Error() }
func (e *skipError) Unwrap() error { return e.err }

// sourceError wraps err, from opening a store file or folder (or reading
// it), as a skipError when it is the entry's own: a lease a box holds on
// it (EWOULDBLOCK: the open does not wait for the lease to break), a
// permission an LSM or a filesystem denies even to root, an I/O error on
// it. Anything else (the snapshot's side, a bug) is returned as is.
func sourceError(err error, what string) error {
	var en unix.Errno
	if !errors.As(err, &en) {
		return err
	}
	reason := ""
	switch en {
	case unix.EWOULDBLOCK:
		reason = "a lease is held on it"
	case unix.EACCES, unix.EPERM:
		reason = what + ": permission denied"
	case unix.EIO:
		reason = what + ": I/O error"
	default:
		return err
	}
	return &skipError{reason: reason, err: err}
}

// skipped is e recorded as not copied, for reason.
func skipped(e Entry, reason string) Entry {
	return Entry{Path: e.Path, Type: TypeSkipped, Mode: e.Mode, UID: e.UID, GID: e.GID, Size: e.Size,
		Mtime: e.Mtime, Ino: e.Ino, Ctime: e.Ctime, Skip: reason}
}

// devIno names a source inode.
type devIno struct{ dev, ino uint64 }

// walker walks a store relative to open folder descriptors: fstatat with
// AT_SYMLINK_NOFOLLOW, openat with O_NOFOLLOW | O_DIRECTORY | O_NONBLOCK,
// never a path re-resolved from the top, never a symlink followed, never
// another filesystem entered. In build mode it also makes the snapshot
// tree beside the walk (linkat for unchanged files, a new inode for the
// rest); otherwise it only lists what it finds (diff, a restore's look
// at the live tree). Take's "nothing changed" scan is scan.go's.
type walker struct {
	build bool

	prev map[string]*Entry
	rec  map[string]*Entry // the restore record (record.go); nil if none
	dino bool              // with rec, on a filesystem inoTrusted names: the record's checks list prev folders

	entries   []Entry
	dev       uint64
	links     map[devIno]int // hardlinked source inode -> index of its first entry
	groups    int
	raced     []Change // entries that kept changing identity under the walk
	snapFd    int      // build: the .partial-ID folder
	newLeader bool     // build: the file just made is its group's new snapshot inode (EMLINK)
	namesBuf  []byte
	copyBuf   []byte
	progress  func(int)

	// build: single-link files are linked or copied on the pool; what
	// those operations learn comes back here, applied once the pool is
	// done (the walker alone touches entries until then).
	pool  *pool
	mu    sync.Mutex
	fixes []fileFix
}

// batch gathers one folder's single-link files for one pool operation:
// two goroutines making names in one folder only queue on its lock; in
// two folders they run side by side.
type batch struct {
	ref               *dirRef
	src, dst, prevDir int
	inos              *folderInodes // prevDir's listing, for the restore record's checks (nil: fstatat)
	jobs              []fileJob
}

type fileJob struct {
	name string
	idx  int
	e    Entry
}

// batchSize bounds a batch, so a huge folder still spreads over the pool.
const batchSize = 256

// flush queues b's files as one operation on the pool.
func (w *walker) flush(b *batch) {
	if len(b.jobs) == 0 {
		return
	}
	jobs := b.jobs
	b.jobs = nil
	src, dst, prevDir, inos := b.src, b.dst, b.prevDir, b.inos
	b.ref.run(func(buf *[]byte) error {
		for _, j := range jobs {
			if w.pool.failed.Load() {
				return nil
			}
			if err := w.fileOp(src, dst, prevDir, inos, j.name, j.idx, j.e, buf); err != nil {
				return err
			}
		}
		return nil
	})
}

// fileFix is what a pooled file operation changed in its entry.
type fileFix struct {
	idx   int
	e     Entry
	drop  bool // the file is gone, or kept changing identity (raced)
	raced bool
}

func newWalker(prev map[string]*Entry, build bool) *walker {
	return &walker{build: build, prev: prev, links: map[devIno]int{}, namesBuf: make([]byte, 32<<10), snapFd: -1}
}

// add records an entry and returns its index.
func (w *walker) add(e Entry) int {
	if w.progress != nil {
		w.progress(1)
	}
	w.entries = append(w.entries, e)
	return len(w.entries) - 1
}

// root walks one store tree: src is its open folder, path its name in the
// snapshot ("store", "channel-stores/ENC"). In build mode the tree is made
// as dstName in dstParent; prevRoot is the same tree in the previous
// snapshot (-1 if none).
func (w *walker) root(src int, path string, skipLocks bool, dstParent int, dstName string, prevRoot int) error {
	var st unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	w.dev = st.Dev
	e := entryOf(path, &st)
	w.add(e)
	if !w.build {
		// prevRoot (for the restore record's checks) stays the caller's.
		return w.dir(src, -1, prevRoot, path, skipLocks, 0, nil)
	}
	// prevRoot belongs to this tree's walk from here on.
	if err := unix.Mkdirat(dstParent, dstName, 0o700); err != nil {
		closeFd(prevRoot)
		return fmt.Errorf("make %s in the snapshot: %w", path, err)
	}
	dst, err := openDirAt(dstParent, dstName)
	if err != nil {
		closeFd(prevRoot)
		return fmt.Errorf("open %s in the snapshot: %w", path, err)
	}
	atime := st.Atim.Nano()
	ref := w.pool.newDirRef(func(failed bool) error {
		closeFd(prevRoot)
		if err := w.pool.finishDir(dst, &e, atime, failed); err != nil {
			return fmt.Errorf("%s in the snapshot: %w", path, err)
		}
		return nil
	})
	err = w.dir(src, dst, prevRoot, path, skipLocks, 0, ref)
	ref.release()
	return err
}

// closeFd closes fd unless it is -1.
func closeFd(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}

// dir walks the folder open as src (in build mode ref holds its snapshot
// folder dst and the previous snapshot's prevDir open for its pooled
// operations).
func (w *walker) dir(src, dst, prevDir int, path string, skipLocks bool, depth int, ref *dirRef) error {
	names, err := readNames(src, w.namesBuf, nil)
	if err != nil {
		return fmt.Errorf("read folder %s: %w", EscapeName(path), err)
	}
	var b *batch
	if ref != nil {
		b = &batch{ref: ref, src: src, dst: dst, prevDir: prevDir, inos: listInodes(prevDir, w.dino, 0)}
		defer w.flush(b)
	}
	sort.Strings(names)
	for _, name := range names {
		if skipLocks && name == home.StoreLocksName {
			continue // the lock folder's mount point: never snapshotted
		}
		if w.pool != nil && w.pool.failed.Load() {
			return w.pool.Err()
		}
		var err error
		for try := 0; try < maxTries; try++ {
			if err = w.entry(src, dst, prevDir, path, name, depth, b); !errors.Is(err, errRaced) {
				break
			}
		}
		if errors.Is(err, errRaced) {
			w.raced = append(w.raced, Change{Op: OpUnstable, Path: path + "/" + name, Type: TypeFile})
			err = nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) entry(src, dst, prevDir int, path, name string, depth int, b *batch) error {
	var st unix.Stat_t
	if err := unix.Fstatat(src, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return nil // gone since the folder was read
		}
		return fmt.Errorf("stat %s/%s: %w", EscapeName(path), EscapeName(name), err)
	}
	rel := path + "/" + name
	e := entryOf(rel, &st)
	switch e.Type {
	case TypeDir:
		if st.Dev != w.dev {
			e.Type = TypeOtherFS
			w.add(e)
			return nil
		}
		if depth+1 > maxDepth {
			w.add(skipped(e, reasonTooDeep))
			return nil
		}
		return w.subdir(src, dst, prevDir, rel, name, e, &st, depth)
	case TypeSymlink:
		target, err := readlinkat(src, name, st.Size)
		if err == unix.ENOENT {
			return nil
		}
		if err == unix.EINVAL {
			return errRaced // no longer a symlink
		}
		if err != nil {
			return fmt.Errorf("read symlink %s: %w", EscapeName(rel), err)
		}
		e.Target = target
		if w.build {
			if err := w.buildSymlink(dst, prevDir, name, &e); err != nil {
				return err
			}
		}
		w.add(e)
		return nil
	case TypeFile:
		if w.build && st.Nlink == 1 {
			// The common case goes to the pool; its entry is fixed up
			// after if the copy learns more (or the file raced away).
			idx := w.add(e)
			b.jobs = append(b.jobs, fileJob{name: name, idx: idx, e: e})
			if len(b.jobs) >= batchSize {
				w.flush(b)
			}
			return nil
		}
		if !w.build && w.rec != nil {
			if ok, via := w.fromPrev(prevDir, name, &e, nil); ok && via {
				e.samePrev = true
			}
		}
		if w.build {
			if err := w.buildFile(src, dst, prevDir, b.inos, name, &e, &st, &w.copyBuf); err != nil {
				var se *skipError
				if !errors.As(err, &se) {
					return err
				}
				e, w.newLeader = skipped(e, se.reason), false
			}
		}
		first := w.build && e.Group == w.groups+1
		idx := w.add(e)
		if first {
			w.groups++
			w.links[devIno{st.Dev, st.Ino}] = idx
		}
		if w.newLeader {
			w.newLeader = false
			w.links[devIno{st.Dev, st.Ino}] = idx
		}
		return nil
	}
	w.add(e) // FIFO, socket, device: listed, never opened
	return nil
}

func (w *walker) subdir(src, dst, prevDir int, rel, name string, e Entry, st *unix.Stat_t, depth int) error {
	fd, err := openDirAt(src, name)
	if err == unix.ENOENT {
		return nil
	}
	if err == unix.ENOTDIR || err == unix.ELOOP {
		return errRaced // swapped for something else since the stat
	}
	if err != nil {
		var se *skipError
		if errors.As(sourceError(err, "cannot be opened"), &se) {
			w.add(skipped(e, se.reason))
			return nil
		}
		return fmt.Errorf("open folder %s: %w", EscapeName(rel), err)
	}
	var fst unix.Stat_t
	if err := unix.Fstat(fd, &fst); err != nil {
		unix.Close(fd)
		return fmt.Errorf("stat %s: %w", EscapeName(rel), err)
	}
	if fst.Ino != st.Ino || fst.Dev != st.Dev {
		unix.Close(fd)
		return errRaced
	}
	w.add(e)
	if !w.build {
		pchild := -1
		if prevDir >= 0 && w.rec != nil {
			if p := w.prev[rel]; p != nil && p.Type == TypeDir {
				if pfd, err := openDirAt(prevDir, name); err == nil {
					pchild = pfd
				}
			}
		}
		err := w.dir(fd, -1, pchild, rel, false, depth+1, nil)
		unix.Close(fd)
		closeFd(pchild)
		return err
	}
	if err := unix.Mkdirat(dst, name, 0o700); err != nil {
		unix.Close(fd)
		return fmt.Errorf("make %s in the snapshot: %w", EscapeName(rel), err)
	}
	dchild, err := openDirAt(dst, name)
	if err != nil {
		unix.Close(fd)
		return fmt.Errorf("open %s in the snapshot: %w", EscapeName(rel), err)
	}
	pchild := -1
	if prevDir >= 0 {
		if p := w.prev[rel]; p != nil && p.Type == TypeDir {
			if pfd, err := openDirAt(prevDir, name); err == nil {
				pchild = pfd
			}
		}
	}
	atime := st.Atim.Nano()
	ref := w.pool.newDirRef(func(failed bool) error {
		unix.Close(fd)
		closeFd(pchild)
		if err := w.pool.finishDir(dchild, &e, atime, failed); err != nil {
			return fmt.Errorf("%s in the snapshot: %w", EscapeName(rel), err)
		}
		return nil
	})
	err = w.dir(fd, dchild, pchild, rel, false, depth+1, ref)
	ref.release()
	return err
}
