package fsx

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ErrSymlink is returned for a symlink where a lock file was expected (it
// also matches unix.ELOOP).
var ErrSymlink = &symlinkError{}

type symlinkError struct{}

func (*symlinkError) Error() string        { return "is a symlink; refusing to follow it" }
func (*symlinkError) Is(target error) bool { return target == unix.ELOOP }

// OpenLockFile opens lock file name in a lock folder that boxes can write
// (docs/store.md, "Locks"): read-only with O_NOFOLLOW | O_NONBLOCK, and only a
// regular file; a missing one is created with O_CREAT | O_EXCL (never plain
// O_CREAT: with fs.protected_regular even root cannot O_CREAT-open another
// user's file in a sticky folder) and made 0666 by fchmod on the new
// descriptor, so every box user and root can share it. A planted symlink or
// FIFO is refused, never followed, never waited on.
func OpenLockFile(dir *os.File, name string) (*os.File, error) {
	path := dir.Name() + "/" + name
	for attempt := 0; attempt < 8; attempt++ {
		fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err == unix.ENOENT {
			fd, err = unix.Openat(int(dir.Fd()), name,
				unix.O_RDONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o666)
			if err == unix.EEXIST {
				continue // someone else made it: open theirs
			}
			if err == nil {
				if err := unix.Fchmod(fd, 0o666); err != nil {
					unix.Close(fd)
					return nil, &os.PathError{Op: "chmod lock", Path: path, Err: err}
				}
			}
		}
		if err == unix.ELOOP || err == unix.EMLINK {
			return nil, &os.PathError{Op: "open lock", Path: path, Err: ErrSymlink}
		}
		if err != nil {
			return nil, &os.PathError{Op: "open lock", Path: path, Err: err}
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, &os.PathError{Op: "stat lock", Path: path, Err: err}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			unix.Close(fd)
			return nil, &os.PathError{Op: "open lock", Path: path, Err: fmt.Errorf("%w (a lock file must be one)", ErrNotRegular)}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
	return nil, &os.PathError{Op: "open lock", Path: path, Err: fmt.Errorf("keeps appearing and vanishing")}
}
