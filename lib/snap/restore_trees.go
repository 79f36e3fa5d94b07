package snap

// Which live trees a restore replaces, and their entries in the snapshot.

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// restoreTree is one live tree a restore replaces.
type restoreTree struct {
	path    string // in the snapshot: "store" or "channel-stores/ENC"
	parent  int    // the live tree's parent folder (not owned)
	name    string // the live tree's name in parent
	entries []Entry
	staging string
	made    bool     // staging was made by this restore
	sino    []uint64 // per entry: the snapshot inode whose bytes the restored file holds (the restore record)
	rec     []Entry  // per entry: its restore record line (SnapIno 0: none)
}

// restoreTrees picks the trees to restore from manifest m and opens their
// live parents.
func (s *session) restoreTrees(m *Manifest, channel, path string) ([]restoreTree, func(), error) {
	var fds []int
	done := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	var paths []string
	if channel != "" {
		enc, err := home.EncodeChannel(channel)
		if err != nil {
			return nil, done, err
		}
		paths = []string{home.SnapChannelStoresDir + "/" + enc}
	} else if path != "" {
		paths = []string{home.SnapStoreDir}
	} else {
		for i := range m.Entries {
			p := m.Entries[i].Path
			if p == home.SnapStoreDir || (strings.HasPrefix(p, home.SnapChannelStoresDir+"/") && strings.Count(p, "/") == 1) {
				paths = append(paths, p)
			}
		}
	}
	byRoot := map[string]int{}
	trees := make([]restoreTree, len(paths))
	for i, p := range paths {
		trees[i].path = p
		byRoot[p] = i
	}
	// A manifest is in walk order, so each tree's entries are one run of
	// it: slice them out without a copy (and copy only if they are not).
	start := make([]int, len(trees))
	for i := range start {
		start[i] = -1
	}
	runs := true
	for k := range m.Entries {
		i, ok := byRoot[treeOf(m.Entries[k].Path)]
		if !ok {
			continue
		}
		t := &trees[i]
		if start[i] < 0 {
			start[i] = k
		} else if start[i]+len(t.entries) != k {
			runs = false
			break
		}
		t.entries = m.Entries[start[i] : k+1 : k+1]
	}
	if !runs {
		for i := range trees {
			trees[i].entries = nil
		}
		for _, e := range m.Entries {
			if i, ok := byRoot[treeOf(e.Path)]; ok {
				trees[i].entries = append(trees[i].entries, e)
			}
		}
	}
	for i := range trees {
		t := &trees[i]
		if len(t.entries) == 0 || t.entries[0].Path != t.path || t.entries[0].Type != TypeDir {
			var held []string
			for _, e := range m.Entries {
				if rest, ok := strings.CutPrefix(e.Path, home.SnapChannelStoresDir+"/"); ok && !strings.Contains(rest, "/") {
					if ch, err := home.DecodeChannel(rest); err == nil {
						held = append(held, strconv.Quote(ch))
					}
				}
			}
			hint := "it holds no channel store"
			if len(held) > 0 {
				hint = "it holds the channel stores of " + strings.Join(held, ", ")
			}
			return nil, done, errs.WithHint(errs.New(errs.ErrNotFound, fmt.Sprintf("snapshot %s has no %s", m.Header.ID, t.path)), hint)
		}
		if t.path == home.SnapStoreDir {
			t.parent, t.name = s.wdir, home.SnapStoreDir
			continue
		}
		if err := unix.Mkdirat(s.wdir, home.SnapChannelStoresDir, 0o755); err != nil && err != unix.EEXIST {
			return nil, done, err
		}
		fd, err := openDirAt(s.wdir, home.SnapChannelStoresDir)
		if err != nil {
			return nil, done, err
		}
		fds = append(fds, fd)
		t.parent, t.name = fd, t.path[len(home.SnapChannelStoresDir)+1:]
	}
	return trees, done, nil
}

// treeOf names the tree (store or channel store) a manifest path is in.
func treeOf(r string) string {
	if strings.HasPrefix(r, home.SnapChannelStoresDir+"/") {
		if j := strings.IndexByte(r[len(home.SnapChannelStoresDir)+1:], '/'); j >= 0 {
			r = r[:len(home.SnapChannelStoresDir)+1+j]
		}
	} else if j := strings.IndexByte(r, '/'); j >= 0 {
		r = r[:j]
	}
	return r
}

// inTrees keeps the entries (in walk order) that lie in one of trees.
func inTrees(es []Entry, trees []restoreTree) []Entry {
	in := func(p string) bool {
		for _, t := range trees {
			if p == t.path || (strings.HasPrefix(p, t.path) && p[len(t.path)] == '/') {
				return true
			}
		}
		return false
	}
	all := true
	for i := range es {
		if !in(es[i].Path) {
			all = false
			break
		}
	}
	if all {
		return es // the usual case: no copy
	}
	var out []Entry
	for i := range es {
		if in(es[i].Path) {
			out = append(out, es[i])
		}
	}
	return out
}
