package box

// Removing supervisor cgroups no process is in: one worker's at a reap,
// every idle one of a home (or of any home) at a sweep.

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// RemoveHostCgroup removes the supervisor cgroup name (HostCgroupDir) if
// no process is in it: `roster-box reap RUN`, for the run's worker.
func RemoveHostCgroup(name string) error {
	dir, err := HostCgroupDir(name)
	if err != nil {
		return err
	}
	if _, err = removeIfEmpty(dir); err != nil {
		return err
	}
	for _, p := range v1CPU() {
		if _, err := removeIfEmpty(filepath.Join(p.mnt, p.parent, name)); err != nil {
			return err
		}
	}
	return nil
}

// RemoveIdleHostCgroups removes every supervisor cgroup of the home at
// dir (named by HostCgroupName, under this process's "roster" parent)
// that no process is in, and returns the names it removed: `roster-box
// reap --cgroups`, which the dispatcher runs at start-up and every 10
// minutes. One a supervisor is in is never removed (the kernel refuses:
// EBUSY); one a supervisor is making and has not moved into yet may be,
// and that supervisor's join starts again.
func RemoveIdleHostCgroups(dir string) ([]string, error) {
	p, err := here()
	if err != nil {
		return nil, err
	}
	removed, err := removeIdleIn(p, dir)
	for _, cp := range v1CPU() {
		if err == nil {
			_, err = removeIdleIn(cp, dir) // the same cgroups' cpu halves
		}
	}
	return removed, err
}

func removeIdleIn(p place, dir string) ([]string, error) {
	parent := filepath.Join(p.mnt, p.parent)
	ents, err := os.ReadDir(parent)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	suffix := HostCgroupName(dir, "")[len(supervisorPrefix):] // "-" and the home's 8 hex digits
	var removed []string
	for _, e := range ents {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, supervisorPrefix) || !strings.HasSuffix(name, suffix) ||
			len(name) <= len(supervisorPrefix)+len(suffix) {
			continue
		}
		gone, err := removeIfEmpty(filepath.Join(parent, name))
		if err != nil {
			return removed, err
		}
		if gone {
			removed = append(removed, name)
		}
	}
	return removed, nil
}

// RemoveIdleHostCgroupsAnywhere is RemoveIdleHostCgroups for every
// "roster" parent in the hierarchy, not only this process's: a supervisor
// started from another cgroup (a systemd unit, a login session, cron)
// made its worker's cgroup beside that one. It returns the removed ones
// as paths from the hierarchy's root. The walk goes at most
// maxCgroupDepth folders deep and never into a roster parent's own
// cgroups (nothing of roster's is made inside them).
func RemoveIdleHostCgroupsAnywhere(dir string) ([]string, error) {
	p, err := here()
	if err != nil {
		return nil, err
	}
	removed, err := removeIdleAnywhere(p, dir)
	for _, cp := range v1CPU() {
		if err == nil {
			_, err = removeIdleAnywhere(cp, dir)
		}
	}
	return removed, err
}

func removeIdleAnywhere(p place, dir string) ([]string, error) {
	suffix := HostCgroupName(dir, "")[len(supervisorPrefix):]
	var removed []string
	var walk func(rel string, depth int) error
	walk = func(rel string, depth int) error {
		ents, err := os.ReadDir(filepath.Join(p.mnt, rel))
		if errors.Is(err, os.ErrNotExist) {
			return nil // removed meanwhile
		}
		if err != nil {
			return err
		}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			name, sub := e.Name(), path.Join(rel, e.Name())
			if path.Base(rel) == cgroupParent {
				if !strings.HasPrefix(name, supervisorPrefix) || !strings.HasSuffix(name, suffix) ||
					len(name) <= len(supervisorPrefix)+len(suffix) {
					continue
				}
				gone, err := removeIfEmpty(filepath.Join(p.mnt, sub))
				if err != nil {
					return err
				}
				if gone {
					removed = append(removed, sub)
				}
				continue
			}
			if depth < maxCgroupDepth {
				if err := walk(sub, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	err := walk("/", 0)
	return removed, err
}

// maxCgroupDepth bounds how deep RemoveIdleHostCgroupsAnywhere looks.
const maxCgroupDepth = 12

// removeIfEmpty removes the cgroup at dir and reports whether it did; one
// gone already, or with a process in it (EBUSY: a supervisor of the
// worker), is no error.
func removeIfEmpty(dir string) (bool, error) {
	for {
		err := unix.Rmdir(dir)
		switch {
		case err == unix.EINTR:
			continue
		case err == nil:
			return true, nil
		case err == unix.ENOENT, err == unix.EBUSY:
			return false, nil
		}
		return false, &os.PathError{Op: "rmdir", Path: dir, Err: err}
	}
}
