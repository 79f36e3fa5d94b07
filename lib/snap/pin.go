package snap

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// Pin keeps snapshot prefix (an id or a unique prefix) of w from the
// count rotation (docs/store.md, "Restore" step 2): an empty file
// .pinned/ID in the snapshot folder, made under the store lock and
// fsynced. Pinning a pinned snapshot changes nothing. None: exit 12;
// several: exit 2. It returns the id.
func Pin(ctx context.Context, w home.Worker, prefix string, opt Options) (string, error) {
	s, id, err := openResolved(ctx, w, prefix, opt)
	if err != nil {
		return "", err
	}
	defer s.close()
	return id, s.pin(id)
}

func (s *session) pin(id string) error {
	if err := unix.Mkdirat(s.snaps, home.SnapPinned, 0o700); err != nil && err != unix.EEXIST {
		return fmt.Errorf("make %s: %w", home.SnapPinned, err)
	}
	dir, err := openDirAt(s.snaps, home.SnapPinned)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	fd, err := unix.Openat(dir, id, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err == unix.EEXIST {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pin %s: %w", id, err)
	}
	unix.Close(fd)
	if err := unix.Fsync(dir); err != nil {
		return err
	}
	return unix.Fsync(s.snaps)
}

// Unpin gives snapshot prefix of w back to the rotation; unpinning one
// that is not pinned changes nothing. It returns the id.
func Unpin(ctx context.Context, w home.Worker, prefix string, opt Options) (string, error) {
	s, id, err := openResolved(ctx, w, prefix, opt)
	if err != nil {
		return "", err
	}
	defer s.close()
	return id, s.unpin(id)
}

func (s *session) unpin(id string) error {
	dir, err := openDirAt(s.snaps, home.SnapPinned)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	if err := unix.Unlinkat(dir, id, 0); err != nil && err != unix.ENOENT {
		return fmt.Errorf("unpin %s: %w", id, err)
	}
	return unix.Fsync(dir)
}

// openResolved opens w's snapshots under the store lock and resolves
// prefix to one of them ("" is refused: pin names one snapshot).
func openResolved(ctx context.Context, w home.Worker, prefix string, opt Options) (*session, string, error) {
	if prefix == "" {
		return nil, "", errs.New(errs.ErrUsage, "snapshot: empty id")
	}
	s, err := open(ctx, w, opt.Wait)
	if err != nil {
		return nil, "", err
	}
	id, err := s.resolve(prefix)
	if err != nil {
		s.close()
		return nil, "", err
	}
	return s, id, nil
}

// pinned is the set of pinned snapshot ids (.pinned/ entries).
func (s *session) pinned() (map[string]bool, error) {
	out := map[string]bool{}
	if s.snaps < 0 {
		return out, nil
	}
	dir, err := openDirAt(s.snaps, home.SnapPinned)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dir), home.SnapPinned)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if home.IsSnapshotID(n) {
			out[n] = true
		}
	}
	return out, nil
}
