package snap

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// What a snapshot skipped, a restore leaves as it is (docs/store.md,
// "Restore"). A file or folder the take could not copy (TypeSkipped: too
// deep, a lease held on it, unreadable even to root) has no copy in the
// snapshot, and most often none in the pre-restore snapshot either (it is
// skipped there for the same reason), so deleting it would be for good.
// Instead each live one is moved, by one rename, from the old tree into
// the restored tree at the same place, right after the swap and before
// the old tree is disposed of.
//
// A restore killed between the swap and those renames would lose them
// with the old tree, so before the swap it writes their list, durably, to
// store-snapshots/.restore-keep.json; every session's cleanup finishes
// it (keepMoves) before it deletes a leftover staging name. The rule is
// the same before the swap and after it: a kept path that is in the tree
// at the staging name and not in the live tree moves to the live tree.
// Before the swap the staging name holds the restored tree, which has no
// such path (a skipped entry is never staged), so nothing moves.

// keepName is the list of a restore's kept paths, in store-snapshots/.
const keepName = ".restore-keep.json"

// keepTree is one tree's kept paths: the tree's staging name in the
// worker folder, the live tree's path from the worker folder ("store",
// "channel-stores/ENC", or below one for restore --path), and the kept
// paths below it.
type keepTree struct {
	Staging string   `json:"staging"`
	Tree    string   `json:"tree"`
	Paths   []string `json:"paths"`
	Mtimes  []int64  `json:"mtimes"` // per path: its folder's mtime in the snapshot (ns), put back after the move
}

// keptPaths is what the snapshot skipped in tree t, as paths below the
// tree's top (topmost only: nothing below a kept path is listed again),
// with the snapshot's mtime of each one's folder.
func keptPaths(t *restoreTree) keepTree {
	k := keepTree{Staging: t.staging, Tree: t.path}
	var byPath map[string]*Entry
	for i := range t.entries {
		e := &t.entries[i]
		if e.Type != TypeSkipped || !strings.HasPrefix(e.Path, t.path+"/") {
			continue
		}
		rel := e.Path[len(t.path)+1:]
		if n := len(k.Paths); n > 0 && strings.HasPrefix(rel, k.Paths[n-1]+"/") {
			continue
		}
		if byPath == nil {
			byPath = index(t.entries)
		}
		var mtime int64
		if d := byPath[e.Path[:strings.LastIndexByte(e.Path, '/')]]; d != nil && d.Type == TypeDir {
			mtime = d.Mtime
		}
		k.Paths, k.Mtimes = append(k.Paths, rel), append(k.Mtimes, mtime)
	}
	return k
}

// underKept reports whether path is in kept or below one of its paths.
func underKept(path string, kept map[string]bool) bool {
	if len(kept) == 0 {
		return false
	}
	if kept[path] {
		return true
	}
	for i := 0; i < len(path); i++ {
		if path[i] == '/' && kept[path[:i]] {
			return true
		}
	}
	return false
}

// skippedPaths is every path (from the snapshot folder) the entries skip.
func skippedPaths(entries []Entry) map[string]bool {
	var out map[string]bool
	for i := range entries {
		if entries[i].Type == TypeSkipped {
			if out == nil {
				out = map[string]bool{}
			}
			out[entries[i].Path] = true
		}
	}
	return out
}

// writeKeep records, before the swap, the kept paths of every staged
// tree; it writes nothing (and removes an old list) when there are none.
func (s *session) writeKeep(trees []restoreTree) ([]keepTree, error) {
	var list []keepTree
	for i := range trees {
		if k := keptPaths(&trees[i]); len(k.Paths) > 0 {
			list = append(list, k)
		}
	}
	if len(list) == 0 {
		return nil, nil
	}
	data, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	if err := replaceAt(s.snaps, keepName, append(data, '\n')); err != nil {
		return nil, fmt.Errorf("record what the restore keeps: %w", err)
	}
	return list, nil
}

// keepMoves moves every kept path of list from the tree at its staging
// name into the live tree, then removes the list. A path that is not at
// the staging name, or is already in the live tree, is left: the move
// happened, or the swap did not.
func (s *session) keepMoves(list []keepTree) error {
	for _, k := range list {
		for i, p := range k.Paths {
			if err := s.keepMove(k, p, k.Mtimes[i]); err != nil {
				return fmt.Errorf("keep %s/%s in the restored tree: %w", EscapeName(k.Tree), EscapeName(p), err)
			}
		}
	}
	if err := unix.Unlinkat(s.snaps, keepName, 0); err != nil && err != unix.ENOENT {
		return err
	}
	return unix.Fsync(s.snaps)
}

func (s *session) keepMove(k keepTree, p string, mtime int64) error {
	dir, base := "", p
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		dir, base = p[:i], p[i+1:]
	}
	from, err := openPath(s.wdir, k.Staging+"/"+dir)
	if err == unix.ENOENT || err == unix.ENOTDIR || err == unix.ELOOP {
		return nil // no such tree (gone, or never swapped): nothing to keep
	}
	if err != nil {
		return err
	}
	defer unix.Close(from)
	var st unix.Stat_t
	if err := unix.Fstatat(from, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return nil // moved already, or never in the old tree
		}
		return err
	}
	to, err := openPath(s.wdir, k.Tree+"/"+dir)
	if err == unix.ENOENT || err == unix.ENOTDIR || err == unix.ELOOP {
		return nil // the restored tree has no folder for it: it goes with the old tree
	}
	if err != nil {
		return err
	}
	defer unix.Close(to)
	err = unix.Renameat2(from, base, to, base, unix.RENAME_NOREPLACE)
	if err == unix.EEXIST {
		return nil // the live tree has one: never replaced
	}
	if err != nil {
		return err
	}
	// The move touched the folder's mtime: it is the snapshot's again.
	if mtime != 0 {
		full := strings.TrimSuffix(k.Tree+"/"+dir, "/")
		i := strings.LastIndexByte(full, '/')
		if pd, err := openPath(s.wdir, full[:max(i, 0)]); err == nil {
			ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(mtime)}
			err = unix.UtimesNanoAt(pd, full[i+1:], ts, unix.AT_SYMLINK_NOFOLLOW)
			unix.Close(pd)
			if err != nil {
				return err
			}
		}
	}
	return syncBoth(from, to)
}

// readKeep reads a kept-paths list a killed restore left (nil when none).
func (s *session) readKeep() ([]keepTree, error) {
	data, err := readFileAt(s.snaps, keepName)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	refuse := func(why string) error {
		return errs.WithHint(errs.New(errs.ErrRefused, fmt.Sprintf("worker %q: %s/%s (what a killed restore was to keep) cannot be read: %s", s.w.Name, home.SnapshotsDir, keepName, why)),
			"the old tree of that restore is still at "+s.w.Dir+"/"+home.RestorePrefix+"*: move back by hand what it holds and the snapshot skipped, then remove "+s.w.Snapshots()+"/"+keepName)
	}
	var list []keepTree
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, refuse(err.Error())
	}
	for _, k := range list {
		ok := strings.HasPrefix(k.Staging, home.RestorePrefix) && !strings.Contains(k.Staging, "/") && cleanRel(k.Tree) &&
			len(k.Mtimes) == len(k.Paths)
		for _, p := range k.Paths {
			ok = ok && cleanRel(p)
		}
		if !ok {
			return nil, refuse("not a restore's list of kept paths")
		}
	}
	return list, nil
}

// cleanRel reports whether p is a relative slash path of plain names.
func cleanRel(p string) bool {
	if p == "" {
		return false
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." {
			return false
		}
	}
	return true
}
