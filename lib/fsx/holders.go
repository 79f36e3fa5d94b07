package fsx

import (
	"bytes"
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// FlockHolder is one flock(2) entry of /proc/locks on a file.
type FlockHolder struct {
	// Pid as this process's /proc shows it: the process that took the
	// lock. 0 or -1 when it is outside our pid namespace (kernels that do
	// not hide such entries altogether).
	Pid       int
	Exclusive bool // WRITE (LOCK_EX) rather than READ (LOCK_SH)
	Waiting   bool // a "->" line: blocked in flock, not holding it
}

// ParseProcLocks returns the FLOCK entries of /proc/locks content that are
// on the file with device dev and inode ino. POSIX, OFD and lease entries
// are skipped (they do not interact with flock on local filesystems);
// malformed lines are skipped too.
func ParseProcLocks(data []byte, dev, ino uint64) []FlockHolder {
	var out []FlockHolder
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		// "1: FLOCK  ADVISORY  WRITE 3456 fe:00:1234 0 EOF", or with "->"
		// after the number for a waiter.
		f := bytes.Fields(line)
		if len(f) < 6 {
			continue
		}
		f = f[1:]
		var h FlockHolder
		if string(f[0]) == "->" {
			h.Waiting = true
			f = f[1:]
		}
		if len(f) < 5 || string(f[0]) != "FLOCK" {
			continue
		}
		switch string(f[2]) {
		case "WRITE":
			h.Exclusive = true
		case "READ":
		default:
			continue
		}
		pid, err := strconv.Atoi(string(f[3]))
		if err != nil {
			continue
		}
		h.Pid = pid
		d, i, ok := parseLockDev(f[4])
		if !ok || d != dev || i != ino {
			continue
		}
		out = append(out, h)
	}
	return out
}

// parseLockDev parses "MAJ:MIN:INO" (major and minor in hex, inode in
// decimal) into a device number as stat(2) gives it and the inode.
func parseLockDev(b []byte) (dev, ino uint64, ok bool) {
	p := bytes.Split(b, []byte(":"))
	if len(p) != 3 {
		return 0, 0, false
	}
	maj, err1 := strconv.ParseUint(string(p[0]), 16, 32)
	min, err2 := strconv.ParseUint(string(p[1]), 16, 32)
	ino, err3 := strconv.ParseUint(string(p[2]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, false
	}
	return unix.Mkdev(uint32(maj), uint32(min)), ino, true
}

// FlockHolders returns the /proc/locks flock entries on f's file. Inside a
// pid namespace the kernel hides (or shows as pid 0) holders outside it, so
// an empty answer does not prove the lock is free: see ProbeFlock.
func FlockHolders(f *os.File) ([]FlockHolder, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: f.Name(), Err: err}
	}
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		return nil, err
	}
	return ParseProcLocks(data, st.Dev, st.Ino), nil
}

// FlockState is what a probe finds a flock in.
type FlockState int

const (
	FlockFree      FlockState = iota // nobody holds it
	FlockShared                      // held with LOCK_SH by one or more
	FlockExclusive                   // held with LOCK_EX
)

func (s FlockState) String() string {
	switch s {
	case FlockShared:
		return "shared"
	case FlockExclusive:
		return "exclusive"
	}
	return "free"
}

// ProbeFlock tells whether the file f is open on is flocked, by trying
// LOCK_SH|LOCK_NB and then LOCK_EX|LOCK_NB and releasing at once. f must be
// a fresh descriptor that holds no lock itself. For the instant of the try
// the probe holds the lock, so a concurrent non-blocking attempt elsewhere
// may see it busy: prefer FlockHolders where it is conclusive.
func ProbeFlock(f *os.File) (FlockState, error) {
	fd := int(f.Fd())
	if err := flockNB(fd, unix.LOCK_SH); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return FlockExclusive, nil
		}
		return FlockFree, &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
	// LOCK_EX on a descriptor holding LOCK_SH converts it; undo first so
	// the exclusive try only sees others.
	unix.Flock(fd, unix.LOCK_UN)
	if err := flockNB(fd, unix.LOCK_EX); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return FlockShared, nil
		}
		return FlockFree, &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
	unix.Flock(fd, unix.LOCK_UN)
	return FlockFree, nil
}

func flockNB(fd, how int) error {
	for {
		err := unix.Flock(fd, how|unix.LOCK_NB)
		if err != unix.EINTR {
			return err
		}
	}
}
