package snap

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// copyFault, when set (tests only), is called before a file's bytes are
// copied; an error it returns fails the copy as a read error would.
var copyFault func(path string) error

// copyDuring, when set (tests only), runs after a file's bytes are copied
// and before it is checked for changes: a box writing mid-copy.
var copyDuring func(path string)

// errRaced means a file changed identity (type or inode) between the stat
// and the open: a box swapped it. The caller re-reads the entry.
var errRaced = errors.New("changed while being read")

const (
	openDirFlags  = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	openReadFlags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	openNewFlags  = unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC
	maxTries      = 3 // copies of a file that keeps changing before it is marked unstable
	smallFile     = 64 << 10
)

func retryEINTR(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}

// openRead opens name in dir for reading without following a symlink,
// without blocking on a FIFO and without touching its atime.
func openRead(dir int, name string) (int, error) {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Openat(dir, name, openReadFlags|unix.O_NOATIME, 0)
		if err == unix.EPERM {
			fd, err = unix.Openat(dir, name, openReadFlags, 0)
		}
		return err
	})
	return fd, err
}

// futimens sets a descriptor's atime and mtime (utimensat with a NULL path;
// x/sys has no wrapper that takes a descriptor with ns precision).
func futimens(fd int, atime, mtime int64) error {
	ts := [2]unix.Timespec{unix.NsecToTimespec(atime), unix.NsecToTimespec(mtime)}
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// applyMeta gives a new inode (never a shared one) owner, mode and times,
// in that order: chown clears setuid bits, so the mode comes after it.
func applyMeta(fd int, e *Entry, atime int64) error {
	if err := unix.Fchown(fd, int(e.UID), int(e.GID)); err != nil {
		return fmt.Errorf("chown: %w", err)
	}
	if err := unix.Fchmod(fd, e.Mode); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	if err := futimens(fd, atime, e.Mtime); err != nil {
		return fmt.Errorf("set times: %w", err)
	}
	return nil
}

// applyLinkMeta gives a new symlink its owner and times (never its mode:
// Linux has none for symlinks).
func applyLinkMeta(dir int, name string, e *Entry) error {
	if err := unix.Fchownat(dir, name, int(e.UID), int(e.GID), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("chown symlink: %w", err)
	}
	ts := []unix.Timespec{unix.NsecToTimespec(e.Mtime), unix.NsecToTimespec(e.Mtime)}
	if err := unix.UtimesNanoAt(dir, name, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("set symlink times: %w", err)
	}
	return nil
}

// copyData copies size bytes from src to dst (a new, empty file) with
// copy_file_range, keeping holes: only the data extents SEEK_DATA reports
// are copied, and the length is set with ftruncate.
func copyData(src, dst int, size int64, buf *[]byte) error {
	if size == 0 {
		return nil
	}
	if size <= smallFile {
		if err := copyRange(src, dst, 0, size, buf); err != nil {
			return err
		}
		return unix.Ftruncate(dst, size)
	}
	for off := int64(0); off < size; {
		data, err := unix.Seek(src, off, unix.SEEK_DATA)
		if err == unix.ENXIO {
			break // only a hole is left
		}
		if err != nil {
			// No SEEK_DATA here: copy the rest as it comes.
			if err := copyRange(src, dst, off, size-off, buf); err != nil {
				return err
			}
			break
		}
		if data >= size {
			break
		}
		hole, err := unix.Seek(src, data, unix.SEEK_HOLE)
		if err != nil || hole > size {
			hole = size
		}
		if err := copyRange(src, dst, data, hole-data, buf); err != nil {
			return err
		}
		off = hole
	}
	return unix.Ftruncate(dst, size)
}

// copyRange copies n bytes at off from src to the same offset in dst,
// falling back to read/write where copy_file_range is not supported.
func copyRange(src, dst int, off, n int64, buf *[]byte) error {
	roff, woff := off, off
	for n > 0 {
		chunk := n
		if chunk > 1<<30 {
			chunk = 1 << 30
		}
		c, err := unix.CopyFileRange(src, &roff, dst, &woff, int(chunk), 0)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EXDEV || err == unix.EINVAL || err == unix.ENOSYS || err == unix.EOPNOTSUPP {
			return copyRW(src, dst, roff, n, buf)
		}
		if err != nil {
			return err
		}
		if c == 0 {
			return nil // the file shrank: the after-copy stat sees it
		}
		n -= int64(c)
	}
	return nil
}

func copyRW(src, dst int, off, n int64, buf *[]byte) error {
	if *buf == nil {
		*buf = make([]byte, 256<<10)
	}
	b := *buf
	for n > 0 {
		want := int64(len(b))
		if n < want {
			want = n
		}
		r, err := unix.Pread(src, b[:want], off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if r == 0 {
			return nil
		}
		if _, err := unix.Pwrite(dst, b[:r], off); err != nil {
			return err
		}
		off += int64(r)
		n -= int64(r)
	}
	return nil
}

// readlinkat reads a symlink's target text of any length.
func readlinkat(dir int, name string, size int64) (string, error) {
	n := int(size) + 1
	if n < 64 {
		n = 64
	}
	for {
		b := make([]byte, n)
		r, err := unix.Readlinkat(dir, name, b)
		if err != nil {
			return "", err
		}
		if r < len(b) {
			return string(b[:r]), nil
		}
		if n >= 1<<20 {
			return "", io.ErrShortBuffer
		}
		n *= 4
	}
}

// readNames lists a folder's entries (without "." and "..") from its
// descriptor, appended to names.
func readNames(fd int, buf []byte, names []string) ([]string, error) {
	ents, err := readEntries(fd, buf)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		names = append(names, e.name)
	}
	return names, nil
}

func statMode(st *unix.Stat_t) byte {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return TypeFile
	case unix.S_IFDIR:
		return TypeDir
	case unix.S_IFLNK:
		return TypeSymlink
	case unix.S_IFIFO:
		return TypeFIFO
	case unix.S_IFSOCK:
		return TypeSocket
	}
	return TypeDevice
}

func entryOf(path string, st *unix.Stat_t) Entry {
	return Entry{
		Path: path, Type: statMode(st), Mode: st.Mode & 0o7777,
		UID: st.Uid, GID: st.Gid, Size: st.Size,
		Mtime: st.Mtim.Nano(), Ino: st.Ino, Ctime: st.Ctim.Nano(),
		multi: st.Nlink > 1,
	}
}

// openDirAt opens folder name in dir without following a symlink.
func openDirAt(dir int, name string) (int, error) {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Openat(dir, name, openDirFlags, 0)
		return err
	})
	return fd, err
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

// openPath opens a folder below dir, one component at a time, never
// following a symlink; empty components are skipped, and a path of none
// is a new descriptor of dir itself.
func openPath(dir int, path string) (int, error) {
	cur := dir
	for _, c := range strings.Split(path, "/") {
		if c == "" {
			continue
		}
		fd, err := openDirAt(cur, c)
		if cur != dir {
			unix.Close(cur)
		}
		if err != nil {
			return -1, err
		}
		cur = fd
	}
	if cur == dir {
		return unix.Dup(dir)
	}
	return cur, nil
}
