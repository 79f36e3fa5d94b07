package fsx

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/errs"
)

// Forever is the wait that never gives up.
const Forever time.Duration = -1

// Flock takes flock(2) on f, shared or exclusive. wait == 0 tries once;
// wait > 0 gives up after wait; wait < 0 (Forever) blocks until it is
// granted or ctx ends. Giving up is an error wrapping errs.ErrBusy.
func Flock(ctx context.Context, f *os.File, shared bool, wait time.Duration) error {
	how := unix.LOCK_EX
	if shared {
		how = unix.LOCK_SH
	}
	fd := int(f.Fd())
	if wait < 0 && ctx.Done() == nil {
		for {
			err := unix.Flock(fd, how)
			if err != unix.EINTR {
				if err != nil {
					return fmt.Errorf("flock %s: %w", f.Name(), err)
				}
				return nil
			}
		}
	}
	var deadline time.Time
	if wait > 0 {
		deadline = time.Now().Add(wait)
	}
	pause := time.Millisecond
	for {
		err := unix.Flock(fd, how|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && err != unix.EINTR {
			return fmt.Errorf("flock %s: %w", f.Name(), err)
		}
		if wait == 0 {
			return fmt.Errorf("%s is held: %w", f.Name(), errs.ErrBusy)
		}
		sleep := pause
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return fmt.Errorf("%s is still held after %s: %w", f.Name(), wait, errs.ErrBusy)
			}
			if left < sleep {
				sleep = left
			}
		}
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if pause < 20*time.Millisecond {
			pause *= 2
		}
	}
}

// Unlock releases a flock taken on f.
func Unlock(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }

// Lock is a held flock on a host-owned lock file in the data tree.
type Lock struct{ f *os.File }

// LockPath opens (creating, mode 0600) a lock file in a folder only root
// writes (tasks/.lock, dispatch.lock) and flocks it. Never use it in a
// folder a box can write: use OpenLockFile there.
func LockPath(ctx context.Context, path string, shared bool, wait time.Duration) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := Flock(ctx, f, shared, wait); err != nil {
		f.Close()
		return nil, err
	}
	return &Lock{f: f}, nil
}

// File is the lock's open file (dispatch.lock writes its pid into it).
func (l *Lock) File() *os.File { return l.f }

// Unlock releases the lock and closes the file.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the last descriptor releases the flock
	l.f = nil
	return err
}
