package snap

import (
	"sort"
	"strings"

	"github.com/roster-sh/roster/lib/home"
)

// The change list shows hardlinks as rsync -aiH does when it copies the
// new tree over the old one (a real run, not --dry-run, which cannot see
// the links it would remake):
//
//	hf+++++++++ store/b => store/a   b is a new name of a's inode
//	hf.st...... store/b => store/a   b was another file (size, mtime differ), now a's inode
//	hf          store/b => store/a   b was another file with the same attributes
//
// Of the names of one inode (a group), rsync copies one, the leader, and
// links the others to it. It goes through them in its file-list order
// (rsyncLess) and the leader is the first that exists in the old tree as
// a regular file, else the last. The leader's line is an ordinary one.
// A later name that was already linked to the leader in the old tree has
// no line, unless the leader is copied again (then the group is linked
// anew). Names link only within one tree (the store or a channel store):
// a restore never links across trees, and a box cannot (each is its own
// mount).

// linkKey names one group of names sharing an inode.
type linkKey struct {
	tree string
	id   uint64
}

// linkGroups says which names of one entry list share an inode: groups
// of two names or more, each member listed in rsync's order.
type linkGroups struct {
	of      map[string]linkKey
	members map[linkKey][]*Entry
}

// groupsOf finds the groups of es: by the manifest's group numbers, or,
// for a walk of the live trees (byIno), by inode number among the names
// whose inode had more than one link when walked (a tree's walk never
// leaves its filesystem, so equal numbers are one inode).
// perTree keeps each tree's names apart (rsync's view of one tree);
// otherwise a group spans the store and its channel stores.
func groupsOf(es []Entry, byIno, perTree bool) linkGroups {
	tree := func(p string) string {
		if perTree {
			return linkTreeOf(p)
		}
		return ""
	}
	key := func(e *Entry) (linkKey, bool) {
		if e.Type != TypeFile {
			return linkKey{}, false
		}
		if byIno {
			// A live walk's names share an inode only if it has more
			// links than one: the others (nearly all) never go in the map.
			if !e.multi {
				return linkKey{}, false
			}
			return linkKey{tree(e.Path), e.Ino}, true
		}
		if e.Group == 0 {
			return linkKey{}, false
		}
		return linkKey{tree(e.Path), uint64(e.Group)}, true
	}
	var g linkGroups
	first := map[linkKey]*Entry{}
	for i := range es {
		k, ok := key(&es[i])
		if !ok {
			continue
		}
		f, seen := first[k]
		if !seen {
			first[k] = &es[i]
			continue
		}
		if g.of == nil {
			g.of = map[string]linkKey{}
			g.members = map[linkKey][]*Entry{}
		}
		if len(g.members[k]) == 0 {
			g.members[k] = append(g.members[k], f)
			g.of[f.Path] = k
		}
		g.members[k] = append(g.members[k], &es[i])
		g.of[es[i].Path] = k
	}
	for _, m := range g.members {
		sort.Slice(m, func(i, j int) bool { return rsyncLess(m[i].Path, m[j].Path) })
	}
	return g
}

// names lists the names linked with path (path included, rsync's order),
// or nil when it has no other name.
func (g *linkGroups) names(path string) []*Entry {
	k, ok := g.of[path]
	if !ok {
		return nil
	}
	return g.members[k]
}

// linkTreeOf names the tree a path is in: "store" or
// "channel-stores/ENC".
func linkTreeOf(p string) string {
	if rest, ok := strings.CutPrefix(p, home.SnapChannelStoresDir+"/"); ok {
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			return p[:len(home.SnapChannelStoresDir)+1+j]
		}
		return p
	}
	if j := strings.IndexByte(p, '/'); j >= 0 {
		return p[:j]
	}
	return p
}

// rsyncLess is rsync's file-list order, which -H follows to pick a
// group's leader: with incremental recursion a folder's files come before
// anything in its subfolders, and folders go depth first in the order of
// their names with a slash appended (so "a.b/" before "a/"). That is:
// compare the folder parts with their trailing slash, then the names.
func rsyncLess(a, b string) bool {
	i, j := strings.LastIndexByte(a, '/'), strings.LastIndexByte(b, '/')
	if da, db := a[:i+1], b[:j+1]; da != db {
		return da < db
	}
	return a[i+1:] < b[j+1:]
}

// hardlinks is what compare needs to know about the groups of the old
// (prev) and new (cur) entries.
type hardlinks struct {
	prev, cur linkGroups
	// prevAll and curAll group names across trees: a link between the
	// store and a channel store changes the ctime too.
	prevAll, curAll linkGroups
	// later holds the line of every later name of a group in cur (nil:
	// no line), keyed by its path.
	later map[string]*Change
}

// newHardlinks finds the groups of prev and cur; nil when neither has
// any. prevLive and curLive say that a list is a walk of the live trees
// (groups by inode number) rather than a manifest.
func newHardlinks(prev []Entry, byPath map[string]*Entry, cur []Entry, quick, prevLive, curLive bool) *hardlinks {
	h := &hardlinks{prev: groupsOf(prev, prevLive, true), cur: groupsOf(cur, curLive, true),
		prevAll: groupsOf(prev, prevLive, false), curAll: groupsOf(cur, curLive, false)}
	if h.prevAll.of == nil && h.curAll.of == nil {
		return nil
	}
	h.later = map[string]*Change{}
	for _, m := range h.cur.members {
		old := func(e *Entry) *Entry {
			if p := byPath[e.Path]; p != nil && p.Type == TypeFile {
				return p
			}
			return nil
		}
		leader := m[len(m)-1]
		for _, e := range m {
			if old(e) != nil {
				leader = e
				break
			}
		}
		lp := old(leader)
		sent := lp == nil || strings.HasPrefix(h.itemize(lp, leader, quick), ">")
		var lk linkKey
		linkedBefore := false
		if lp != nil {
			lk, linkedBefore = h.prev.of[lp.Path]
		}
		for _, e := range m {
			if e == leader {
				continue
			}
			p := old(e)
			if p != nil && !sent && linkedBefore && h.prev.of[p.Path] == lk {
				h.later[e.Path] = nil // already that inode: nothing to do
				continue
			}
			c := &Change{Op: OpChange, Path: e.Path, Type: TypeFile, Itemize: linkItemize(p, e), LinkTo: leader.Path}
			if p == nil {
				c.Op = OpNew
			}
			h.later[e.Path] = c
		}
	}
	return h
}

// itemize is itemize for a file's own line, except that a new ctime on
// the same inode counts for nothing when the names linked to the inode
// changed: adding or removing a link sets the ctime.
// h may be nil (no groups on either side).
func (h *hardlinks) itemize(p, e *Entry, quick bool) string {
	if h != nil && !quick && p != nil && p.Type == TypeFile && e.Type == TypeFile &&
		p.Ino == e.Ino && p.Ctime != e.Ctime && !sameNames(h.prevAll.names(p.Path), h.curAll.names(e.Path)) {
		q := *p
		q.Ctime = e.Ctime
		return itemize(&q, e, quick)
	}
	return itemize(p, e, quick)
}

func sameNames(a, b []*Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Path != b[i].Path {
			return false
		}
	}
	return true
}

// linkItemize is rsync's YXcstpoguax for a name linked to its group's
// leader: h, then what differs from the file the name had before (rsync
// writes spaces when nothing does), or pluses for a new name.
func linkItemize(p, e *Entry) string {
	if p == nil {
		return "hf+++++++++"
	}
	b := []byte("hf.........")
	changed := false
	set := func(i int, c byte) { b[i] = c; changed = true }
	if p.Size != e.Size {
		set(3, 's')
	}
	if p.Mtime != e.Mtime {
		set(4, 't')
	}
	if p.Mode != e.Mode {
		set(5, 'p')
	}
	if p.UID != e.UID {
		set(6, 'o')
	}
	if p.GID != e.GID {
		set(7, 'g')
	}
	if !changed {
		return "hf" + strings.Repeat(" ", 9) // as rsync: all dots become spaces
	}
	return string(b)
}
