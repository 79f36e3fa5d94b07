package fsx

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// ErrNotRegular is returned for a FIFO, socket, device or folder where a
// regular file was required.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is returned when a box-written file exceeds its bound.
var ErrTooLarge = errors.New("too large")

// OpenDir opens a folder for use as the base of *at calls. The last
// component must not be a symlink.
func OpenDir(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open folder", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// OpenBeneath opens name relative to dir the way every file a box can
// write is opened: openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS (no
// "..", no absolute path, no symlink anywhere on the way) and O_NONBLOCK (a
// FIFO never blocks us), and accepts only a regular file.
func OpenBeneath(dir *os.File, name string, flags int, mode uint32) (*os.File, error) {
	how := unix.OpenHow{
		Flags:   uint64(flags | unix.O_NONBLOCK | unix.O_NOFOLLOW | unix.O_CLOEXEC),
		Mode:    uint64(mode),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	if flags&unix.O_CREAT == 0 {
		how.Mode = 0
	}
	fd, err := unix.Openat2(int(dir.Fd()), name, &how)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir.Name() + "/" + name, Err: err}
	}
	f := os.NewFile(uintptr(fd), dir.Name()+"/"+name)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "stat", Path: f.Name(), Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: f.Name(), Err: ErrNotRegular}
	}
	return f, nil
}

// ReadBeneath reads a box-written regular file of at most max bytes.
func ReadBeneath(dir *os.File, name string, max int64) ([]byte, error) {
	f, err := OpenBeneath(dir, name, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: f.Name(), Err: err}
	}
	if int64(len(data)) > max {
		return nil, &os.PathError{Op: "read", Path: f.Name(), Err: fmt.Errorf("%w (over %d bytes)", ErrTooLarge, max)}
	}
	return data, nil
}
