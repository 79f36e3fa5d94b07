package fsx

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// OpenRegular opens path read-only without following a final symlink and
// without blocking on a FIFO, and accepts only a regular file: for reading
// files in folders the host owns but whose names it did not choose (run
// folders, snapshots), where a planted link or FIFO must be refused.
func OpenRegular(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ELOOP {
			err = fmt.Errorf("%w (not followed)", ErrSymlink)
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	return os.NewFile(uintptr(fd), path), nil
}
