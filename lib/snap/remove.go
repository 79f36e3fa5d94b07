package snap

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// removeAt deletes name in dir and everything below it, relative to
// descriptors, never following a symlink. A folder is emptied by one
// walker that reads folders and a pool that unlinks (unlink calls in
// different folders run in parallel); each folder is removed once its
// entries are gone.
func removeAt(dir int, name string) error {
	err := unix.Unlinkat(dir, name, 0)
	if err == nil || err == unix.ENOENT {
		return nil
	}
	if err != unix.EISDIR && err != unix.EPERM {
		return err
	}
	p := newPool()
	werr := removeWalk(p, dir, name, nil, name)
	if perr := p.wait(); werr == nil {
		werr = perr
	}
	return werr
}

// removeWalk empties and removes folder name in dir. parent (nil at the
// top) is the reference that keeps dir open; it is held until name is
// removed.
// path names it in errors.
func removeWalk(p *pool, dir int, name string, parent *dirRef, path string) error {
	fd, err := openDirAt(dir, name)
	if err == unix.ENOENT {
		return nil
	}
	if err == unix.ENOTDIR || err == unix.ELOOP {
		// Not a folder after all (a symlink to one): unlink the name.
		if err := unix.Unlinkat(dir, name, 0); err != nil && err != unix.ENOENT {
			return err
		}
		return nil
	}
	if err != nil {
		return err
	}
	if parent != nil {
		parent.n.Add(1)
	}
	ref := p.newDirRef(func(failed bool) error {
		unix.Close(fd)
		var err error
		if !failed {
			if err = unix.Unlinkat(dir, name, unix.AT_REMOVEDIR); err == unix.ENOENT {
				err = nil
			} else if err != nil {
				err = fmt.Errorf("remove folder %s: %w", EscapeName(path), err)
			}
		}
		if parent != nil {
			parent.release()
		}
		return err
	})
	defer ref.release()
	buf := direntBufs.Get().(*[]byte)
	ents, err := readEntries(fd, *buf)
	direntBufs.Put(buf)
	if err != nil {
		return err
	}
	// Sub-folders on the walker; this folder's other entries in one
	// operation: two goroutines unlinking in one folder only queue on its
	// lock, in two folders they run side by side.
	var files []dirent
	for _, e := range ents {
		if p.failed.Load() {
			return p.Err()
		}
		dir := e.typ == unix.DT_DIR
		if e.typ == unix.DT_UNKNOWN {
			// A filesystem without d_type: ask.
			var st unix.Stat_t
			dir = unix.Fstatat(fd, e.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
		}
		if dir {
			if err := removeWalk(p, fd, e.name, ref, path+"/"+e.name); err != nil {
				return err
			}
			continue
		}
		files = append(files, e)
	}
	if len(files) > 0 {
		ref.run(func(*[]byte) error {
			for _, e := range files {
				if err := unix.Unlinkat(fd, e.name, 0); err != nil && err != unix.ENOENT {
					return fmt.Errorf("remove %s: %w", EscapeName(path+"/"+e.name), err)
				}
			}
			return nil
		})
	}
	return nil
}

// dirent is one folder entry with its getdents type (DT_DIR, DT_REG, ...;
// DT_UNKNOWN where the filesystem does not say).
type dirent struct {
	name string
	typ  uint8
	ino  uint64 // d_ino: the inode number, on the filesystems inoTrusted names
}

// direntBufs are getdents buffers for the folder reads of a removal and
// of staging's folderInodes, one per folder otherwise (a thousand
// folders made 32 MB of garbage for the collector): readEntries copies
// what it returns, so a buffer goes back as soon as it returns.
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// readEntries lists a folder's entries with their types, from getdents64
// (linux_dirent64: ino u64, off s64, reclen u16, type u8, name).
func readEntries(fd int, buf []byte) ([]dirent, error) {
	if _, err := unix.Seek(fd, 0, io.SeekStart); err != nil {
		return nil, err
	}
	var out []dirent
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return out, nil
		}
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(*(*uint16)(unsafe.Pointer(&b[16])))
			if reclen < 19 || reclen > len(b) {
				return nil, unix.EIO
			}
			typ := b[18]
			ino := binary.NativeEndian.Uint64(b[:8])
			nm := b[19:reclen]
			for i, c := range nm {
				if c == 0 {
					nm = nm[:i]
					break
				}
			}
			if s := string(nm); s != "." && s != ".." {
				out = append(out, dirent{name: s, typ: typ, ino: ino})
			}
			b = b[reclen:]
		}
	}
}
