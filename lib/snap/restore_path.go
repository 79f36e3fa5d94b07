package snap

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// Restoring one file or folder (restore --path).
//
// A path restore is a whole restore of a smaller tree: the file or folder
// at the path (or, when folders above it are gone from the live tree, the
// topmost gone folder, staged with only the folders down to the path) is
// staged from the snapshot beside the worker's folder and swapped in with
// one renameat2, after the same pre-restore snapshot. The folder it lands
// in keeps its times: a path restore changes the path and nothing else.

// CleanRestorePath checks a --path as an operator types it, relative to
// the store (or to a channel store): not absolute, no "." or ".."
// component, no empty one, not the store's .locks mount point. It returns
// the path without trailing slashes. Any refusal is a usage error.
func CleanRestorePath(p string, inStore bool) (string, error) {
	bad := func(why string) (string, error) {
		return "", errs.New(errs.ErrUsage, fmt.Sprintf("--path %q: %s", p, why))
	}
	switch {
	case p == "":
		return bad("empty (leave --path out to restore the whole tree)")
	case strings.HasPrefix(p, "/"):
		return bad("absolute: give the path below the store (notes/a.md, not $HOME/store/notes/a.md)")
	case strings.IndexByte(p, 0) >= 0:
		return bad("holds a NUL byte")
	}
	clean := strings.TrimRight(p, "/")
	for _, c := range strings.Split(clean, "/") {
		switch c {
		case "":
			return bad("an empty component (//)")
		case ".":
			if clean == "." {
				return bad("the whole tree (leave --path out to restore it)")
			}
			return bad("a . component")
		case "..":
			return bad("a .. component: a restore never leaves the store")
		}
	}
	if inStore && (clean == home.StoreLocksName || strings.HasPrefix(clean, home.StoreLocksName+"/")) {
		return bad("the lock folder's mount point, which is never snapshotted")
	}
	return clean, nil
}

// narrowTree narrows tree t (the store or a channel store, its entries
// those of snapshot id) to rel below it. The result is the path's own
// file or folder, or, when folders above it are gone from the live tree,
// the topmost gone one holding only the folders down to the path (put:
// the path is not in the live tree, the restore puts it back). The live
// folders above are opened one by one without following a link: one that
// is a symlink or not a folder is refused (exit 13). done closes what it
// opened.
func (s *session) narrowTree(t restoreTree, rel, id string) (nt restoreTree, put bool, done func(), err error) {
	var fds []int
	done = func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	sub := t.path + "/" + rel
	k := -1
	for i := range t.entries {
		if t.entries[i].Path == sub {
			k = i
			break
		}
	}
	shown := EscapeName(sub)
	if k < 0 {
		return nt, false, done, errs.WithHint(errs.New(errs.ErrNotFound, fmt.Sprintf("snapshot %s has no %s", id, shown)),
			"`roster-snap diff "+s.w.Name+" "+id+"` lists what differs between it and the live store")
	}
	if e := &t.entries[k]; special(e.Type) {
		return nt, false, done, errs.New(errs.ErrNotFound, fmt.Sprintf("snapshot %s holds no copy of %s (a %s: snapshots do not copy one)", id, shown, TypeName(e.Type)))
	}
	end := k + 1
	for end < len(t.entries) && strings.HasPrefix(t.entries[end].Path, sub+"/") {
		end++
	}
	// The live folders above the path, from the tree's top down.
	parent, name, top := t.parent, t.name, t.path
	missing := false
	var st unix.Stat_t
	switch err := unix.Fstatat(t.parent, t.name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == unix.ENOENT && t.path == home.SnapStoreDir:
		return nt, false, done, errs.WithHint(errs.New(errs.ErrNotFound, fmt.Sprintf("worker %q has no store folder (%s)", s.w.Name, s.w.Store())),
			"restore the whole store: `roster-snap restore "+s.w.Name+" --from "+id+"`")
	case err == unix.ENOENT:
		missing = true
	case err != nil:
		return nt, false, done, fmt.Errorf("stat %s: %w", t.path, err)
	}
	comps := strings.Split(rel, "/")
	if !missing {
		cur, err := openDirAt(t.parent, t.name)
		if err != nil {
			return nt, false, done, fmt.Errorf("open %s: %w", t.path, err)
		}
		fds = append(fds, cur)
		at := t.path
		for i, c := range comps {
			at += "/" + c
			err := unix.Fstatat(cur, c, &st, unix.AT_SYMLINK_NOFOLLOW)
			if err == unix.ENOENT {
				parent, name, top, missing = cur, c, at, true
				break
			}
			if err != nil {
				return nt, false, done, fmt.Errorf("stat %s: %w", EscapeName(at), err)
			}
			if i == len(comps)-1 {
				parent, name, top = cur, c, at
				break
			}
			if err := liveFolder(&st, at, rel, comps[:i+1]); err != nil {
				return nt, false, done, err
			}
			next, err := openDirAt(cur, c)
			if err == unix.ELOOP || err == unix.ENOTDIR {
				return nt, false, done, liveFolder(&unix.Stat_t{}, at, rel, comps[:i+1])
			}
			if err != nil {
				return nt, false, done, fmt.Errorf("open %s: %w", EscapeName(at), err)
			}
			fds = append(fds, next)
			cur = next
		}
	}
	nt = restoreTree{path: top, parent: parent, name: name}
	if top == sub {
		nt.entries = t.entries[k:end:end]
		return nt, missing, done, nil
	}
	// The gone folders from top down to the path's, then the path.
	byPath := index(t.entries[:k])
	for p := top; p != sub; {
		e := byPath[p]
		if e == nil || e.Type != TypeDir {
			return nt, false, done, fmt.Errorf("%w: snapshot %s: %s has no folder %s", ErrBadManifest, id, shown, EscapeName(p))
		}
		nt.entries = append(nt.entries, *e)
		p = sub[:len(p)+1+strings.IndexByte(sub[len(p)+1:]+"/", '/')]
	}
	nt.entries = append(nt.entries, t.entries[k:end]...)
	return nt, true, done, nil
}

// liveFolder refuses a live component above a restored path that is not
// a folder: a restore never follows a link, nor restores through a file.
func liveFolder(st *unix.Stat_t, at, rel string, comps []string) error {
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return nil
	}
	what := "not a folder"
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		what = "a symlink (a restore never follows one)"
	}
	return errs.WithHint(errs.New(errs.ErrConflict, fmt.Sprintf("cannot restore %s: the live %s is %s", EscapeName(rel), EscapeName(at), what)),
		"restore it as a whole: --path "+EscapeName(strings.Join(comps, "/")))
}

// stageLeaf stages a tree that is one file or symlink: a new inode (or
// link) at the staging name, with the manifest's owner, mode and times.
func (s *session) stageLeaf(t *restoreTree, from string) error {
	e := &t.entries[0]
	snap, err := openDirAt(s.snaps, from)
	if err != nil {
		return err
	}
	defer unix.Close(snap)
	slash := strings.LastIndexByte(t.path, '/')
	src, err := openPath(snap, t.path[:slash])
	if err != nil {
		return fmt.Errorf("snapshot %s: open %s: %w", from, EscapeName(t.path[:slash]), err)
	}
	defer unix.Close(src)
	t.sino = make([]uint64, 1)
	t.made = true // removing a staging name never made is no error
	switch e.Type {
	case TypeFile:
		var buf []byte
		sino, err := restoreFileAs(nil, src, t.path[slash+1:], s.wdir, t.staging, e, &buf)
		if err != nil {
			return fmt.Errorf("restore %s: %w", EscapeName(e.Path), err)
		}
		t.sino[0] = sino
	case TypeSymlink:
		if err := unix.Symlinkat(e.Target, s.wdir, t.staging); err != nil {
			return fmt.Errorf("restore %s: %w", EscapeName(e.Path), err)
		}
		if err := applyLinkMeta(s.wdir, t.staging, e); err != nil {
			return fmt.Errorf("restore %s: %w", EscapeName(e.Path), err)
		}
	default:
		return fmt.Errorf("restore %s: a %s is never restored", EscapeName(e.Path), TypeName(e.Type))
	}
	return nil
}

// folderTimes are a live folder's times, read before a path restore's
// swap and put back after it: the rename that swaps a path in changes
// its folder's mtime, and a path restore changes nothing but the path.
type folderTimes struct {
	fd           int
	atime, mtime int64
	ok           bool
}

func keepTimes(fd int) folderTimes {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return folderTimes{}
	}
	return folderTimes{fd: fd, atime: st.Atim.Nano(), mtime: st.Mtim.Nano(), ok: true}
}

func (f folderTimes) put() error {
	if !f.ok {
		return nil
	}
	if err := futimens(f.fd, f.atime, f.mtime); err != nil {
		return fmt.Errorf("keep the times of the restored path's folder: %w", err)
	}
	return unix.Fsync(f.fd)
}

// liveLeaf is the walk of a live tree that is not a folder: its one
// entry (nil when it is gone).
func liveLeaf(parent int, name, path string) ([]Entry, bool, error) {
	var st unix.Stat_t
	err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == unix.ENOENT {
		return nil, true, nil
	}
	if err != nil {
		return nil, true, fmt.Errorf("stat %s: %w", EscapeName(path), err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return nil, false, nil
	}
	e := entryOf(path, &st)
	if e.Type == TypeSymlink {
		if e.Target, err = readlinkat(parent, name, st.Size); err != nil {
			return nil, true, fmt.Errorf("read link %s: %w", EscapeName(path), err)
		}
	}
	return []Entry{e}, true, nil
}
