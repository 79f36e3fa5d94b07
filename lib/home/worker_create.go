package home

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/fsx"
)

// TrashPrefix starts the name a purged worker folder is renamed to before it
// is deleted (not a valid worker name, so never mistaken for one).
const TrashPrefix = ".trash-"

// Trash is where worker name's folder goes while it is being deleted; stamp
// makes it unique.
func (h Home) Trash(name, stamp string) string {
	return filepath.Join(h.Dir, "data", "workers", TrashPrefix+name+"-"+stamp)
}

// InitData creates data/ (mode 0700: only root walks the data tree) and
// data/workers/, and workers/ for the specs. What exists is left as it is,
// except that data/ is brought back to 0700.
func (h Home) InitData() error {
	if err := os.MkdirAll(h.Dir, 0o755); err != nil {
		return err
	}
	if err := fsx.MkdirDurable(h.Data(), 0o700); err != nil {
		return err
	}
	if err := os.Chmod(h.Data(), 0o700); err != nil {
		return err
	}
	if err := fsx.MkdirDurable(h.DataWorkers(), 0o700); err != nil {
		return err
	}
	return fsx.MkdirDurable(h.WorkersDir(), 0o755)
}

// StoreOwner returns the uid owning the worker's store/, or -1 if it has none.
func (w Worker) StoreOwner() int {
	var st unix.Stat_t
	if err := unix.Lstat(w.Store(), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return -1
	}
	return int(st.Uid)
}

// CreateFolders makes the worker's folders in the data tree for box user
// uid (gid the same number), as docs/layout.md and docs/store.md fix them:
//
//	W/                 root 0700
//	store/             uid 0700     the worker's durable space
//	store/.locks       root 0755    only an empty mount point for locks/
//	locks/             root 1777    roster-lock's lock files
//	locks/store        root 0644    the whole-store lock, pre-created
//	channel-stores/    uid 0700
//	store-snapshots/   root 0700
//	tasks/             root 0700    never exposed to a box
//	view/              root 0755    read-only in the box at $HOME/self/view
//	runs/              root 0755    read-only in the box at $HOME/self/runs
//
// Existing folders are kept (re-adding a worker whose folder was kept by
// `worker rm`); a kept store/ or channel-stores/ owned by another uid is
// handed to uid, without following any link in it.
func (w Worker) CreateFolders(uid int) error {
	if uid <= 0 {
		return fmt.Errorf("worker %s: box uid %d: must be above 0", w.Name, uid)
	}
	if err := fsx.MkdirDurable(filepath.Dir(w.Dir), 0o700); err != nil {
		return err
	}
	type dir struct {
		path  string
		perm  os.FileMode
		owner int
	}
	for _, d := range []dir{
		{w.Dir, 0o700, 0},
		{w.Store(), 0o700, uid},
		{w.StoreLocksMount(), 0o755, 0},
		{w.Locks(), 0o777 | os.ModeSticky, 0},
		{w.ChannelStores(), 0o700, uid},
		{w.Snapshots(), 0o700, 0},
		{w.Tasks(), 0o700, 0},
		{w.View(), 0o755, 0},
		{w.Runs(), 0o755, 0},
	} {
		if err := mkdirOwned(d.path, d.perm, d.owner); err != nil {
			return fmt.Errorf("worker %s: %w", w.Name, err)
		}
	}
	if err := createStoreLock(w.StoreLock()); err != nil {
		return fmt.Errorf("worker %s: %w", w.Name, err)
	}
	return fsx.SyncDir(w.Dir)
}

// mkdirOwned makes dir with perm and owner (uid = gid), or checks an existing
// one is a real folder and gives it that owner. os.Chmod cannot set the
// sticky bit portably through os.FileMode, so unix.Chmod is used.
func mkdirOwned(dir string, perm os.FileMode, owner int) error {
	mode := uint32(perm.Perm())
	if perm&os.ModeSticky != 0 {
		mode |= unix.S_ISVTX
	}
	err := unix.Mkdir(dir, mode)
	created := err == nil
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return &os.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return &os.PathError{Op: "mkdir", Path: dir, Err: errors.New("exists and is not a folder (a link or a file); move it away")}
	}
	if int(st.Uid) != owner || int(st.Gid) != owner {
		if owner != 0 && !created {
			if err := chownTree(dir, owner); err != nil {
				return err
			}
		} else if err := unix.Lchown(dir, owner, owner); err != nil {
			return &os.PathError{Op: "chown", Path: dir, Err: err}
		}
	}
	if created || st.Mode&07777 != mode {
		if err := unix.Chmod(dir, mode); err != nil {
			return &os.PathError{Op: "chmod", Path: dir, Err: err}
		}
	}
	if created {
		return fsx.SyncDir(filepath.Dir(dir))
	}
	return nil
}

// chownTree gives every entry under dir to owner with lchown: links are
// changed themselves, never followed.
func chownTree(dir string, owner int) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := unix.Lchown(p, owner, owner); err != nil {
			return &os.PathError{Op: "chown", Path: p, Err: err}
		}
		return nil
	})
}

// createStoreLock pre-creates locks/store, root-owned 0644 (docs/store.md). An
// existing regular file is kept; anything else there is refused.
func createStoreLock(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err == nil {
		defer unix.Close(fd)
		if err := unix.Fchmod(fd, 0o644); err != nil {
			return &os.PathError{Op: "chmod", Path: path, Err: err}
		}
		return fsx.SyncDir(filepath.Dir(path))
	}
	if !errors.Is(err, unix.EEXIST) {
		return &os.PathError{Op: "create", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return &os.PathError{Op: "create", Path: path, Err: errors.New("exists and is not a regular file; remove it")}
	}
	return nil
}

// IsTrash reports whether a name in data/workers/ is a purge left half done.
func IsTrash(name string) bool { return strings.HasPrefix(name, TrashPrefix) }
