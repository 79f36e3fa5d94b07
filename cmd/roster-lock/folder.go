package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// openFolder resolves and opens the lock folder (docs/tools.md): --worker W is
// data/workers/W/locks; --store DIR is DIR/.locks, except a worker's own
// store, which means --worker (its .locks is only an empty mount point on
// the host); inside a box the default is $HOME/store; on the host there is
// no default. A store's .locks is made when it is missing, as flock(1)
// makes its lock file, unless only listing (ls: nothing is created to be
// read; a missing one returns a nil folder).
func (c *opts) openFolder(ls bool) (*os.File, error) {
	var path string
	var err error
	inStore := false
	switch {
	case c.Worker != "":
		path, err = workerLocks(c.Home, c.Worker)
	case c.Store != "":
		path, inStore, err = storeLocks(c.Home, c.Store)
	case os.Getenv("ROSTER_OUTBOX") != "":
		h := os.Getenv("HOME")
		if h == "" {
			return nil, errs.WithHint(errs.New(errs.ErrUsage, "inside a box with no $HOME: no default store"),
				"name the store with --store DIR")
		}
		path, inStore, err = storeLocks("", filepath.Join(h, home.StoreDir)) // a box's $HOME/store is its worker's store
	default:
		return nil, errs.WithHint(errs.New(errs.ErrUsage, "no lock folder: give --worker W or --store DIR"),
			"on the host a worker's locks are --worker W; only inside a box is $HOME/store the default")
	}
	if err != nil {
		return nil, err
	}
	var d *os.File
	if inStore {
		d, err = openStoreLocks(path, !ls)
		if ls && errors.Is(err, unix.ENOENT) {
			return nil, nil
		}
		path = filepath.Join(path, home.StoreLocksName)
	} else {
		d, err = fsx.OpenDir(path)
	}
	switch {
	case err == nil:
		return d, nil
	case errors.Is(err, unix.ENOENT):
		return nil, errs.WithHint(errs.New(errs.ErrNoHome, fmt.Sprintf("no lock folder at %s", path)),
			"a worker's lock folder is made by `roster worker add`")
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
		return nil, errs.WithHint(errs.New(errs.ErrRefused, fmt.Sprintf("lock folder %s is a symlink or not a folder; refusing it", path)),
			"the lock folder must be a real folder; remove what is there and retry")
	}
	return nil, err
}

// openStoreLocks opens DIR/.locks relative to an open DIR, never through
// a symlink and never blocking on a FIFO, and with create makes it when
// it is missing (mode 0777 less the umask, as mkdir(1) would). A symlink,
// FIFO or file at .locks is ELOOP or ENOTDIR: refused, left as it is.
func openStoreLocks(dir string, create bool) (*os.File, error) {
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open store", Path: dir, Err: err}
	}
	defer unix.Close(dfd)
	path := filepath.Join(dir, home.StoreLocksName)
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	for attempt := 0; ; attempt++ {
		fd, err := unix.Openat(dfd, home.StoreLocksName, flags, 0)
		if err == nil {
			return os.NewFile(uintptr(fd), path), nil
		}
		if err != unix.ENOENT || !create || attempt == 8 {
			return nil, &os.PathError{Op: "open folder", Path: path, Err: err}
		}
		// Made meanwhile by someone else (EEXIST): open theirs.
		if err := unix.Mkdirat(dfd, home.StoreLocksName, 0o777); err != nil && err != unix.EEXIST {
			return nil, &os.PathError{Op: "make lock folder", Path: path, Err: err}
		}
		if err := unix.Fsync(dfd); err != nil {
			return nil, &os.PathError{Op: "fsync", Path: dir, Err: err}
		}
	}
}

// workerLocks is worker w's lock folder; the worker must exist.
func workerLocks(homeDir, w string) (string, error) {
	if err := home.ValidWorker(w); err != nil {
		return "", err
	}
	h, err := home.Open(homeDir)
	if err != nil {
		return "", err
	}
	wk := h.Worker(w)
	if fi, err := os.Stat(wk.Dir); err != nil || !fi.IsDir() {
		return "", errs.WithHint(errs.New(errs.ErrNoHome, fmt.Sprintf("no worker %q in %s", w, h.Dir)),
			"`roster worker ls` lists the workers; --home (ROSTER_HOME) picks the home")
	}
	return wk.Locks(), nil
}

// storeLocks is DIR (inStore: its .locks is the folder), or the worker's
// lock folder when DIR is a worker's own store: recognised by its place in a data tree
// (HOME/data/workers/W/store) or, for any other path to it (a bind mount,
// a symlink), by device and inode against every worker's store in the home.
func storeLocks(homeDir, dir string) (path string, inStore bool, err error) {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return "", false, errs.WithHint(errs.New(errs.ErrNoHome, fmt.Sprintf("no store at %s", dir)),
			"--store names an existing folder; its .locks holds the lock files")
	}
	if w, ok := workerOf(dir, st); ok {
		return w.Locks(), false, nil
	}
	if homeDir != "" {
		if h, err := home.Open(homeDir); err == nil {
			names, _ := readNames(h.DataWorkers())
			for _, n := range names {
				if home.ValidWorker(n) != nil {
					continue
				}
				w := h.Worker(n)
				if fi, err := os.Stat(w.Store()); err == nil && os.SameFile(fi, st) {
					return w.Locks(), false, nil
				}
			}
		}
	}
	return dir, true, nil
}

// workerOf recognises DIR as HOME/data/workers/W/store by its real path.
func workerOf(dir string, st os.FileInfo) (home.Worker, bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return home.Worker{}, false
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return home.Worker{}, false
	}
	w, ok := home.WorkerOfStore(real)
	if !ok {
		return home.Worker{}, false
	}
	if fi, err := os.Stat(w.Store()); err != nil || !os.SameFile(fi, st) {
		return home.Worker{}, false
	}
	return w, true
}

func readNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}
