package snap

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
)

// RestoreOptions choose what a restore does.
type RestoreOptions struct {
	Options
	From    string // snapshot id or unique prefix; "" = the newest
	Channel string // restore only this channel's store ("" = the store and every channel store in the snapshot)
	DryRun  bool   // only list the changes the restore would make
	Force   bool   // restore even while a box of the worker is live
}

// RestoreResult is what a restore did (or, dry, would do).
type RestoreResult struct {
	From       string   // the snapshot restored
	PreRestore string   // the snapshot of the state before (the undo); "" on a dry run
	Changes    []Change // the changes to the live trees
	Trashed    []string // old trees kept in .trash/ because a box was live
}

// resolve picks the snapshot a prefix names (the newest for "").
func (s *session) resolve(prefix string) (string, error) {
	ids, err := s.ids()
	if err != nil {
		return "", err
	}
	if len(ids) == 0 {
		return "", errs.WithHint(errs.New(errs.ErrNotFound, fmt.Sprintf("worker %q has no snapshots", s.w.Name)),
			"take one with `roster-snap take "+s.w.Name+"`")
	}
	if prefix == "" {
		return ids[len(ids)-1], nil
	}
	id, err := home.Resolve("snapshot", prefix, ids)
	if errors.Is(err, errs.ErrNotFound) {
		err = errs.WithHint(err, "`roster-snap ls "+s.w.Name+"` lists the snapshots")
	}
	return id, err
}

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

// Restore replaces worker w's store (and channel stores) with a snapshot's
// copy (store.md, "Restore"), under the store lock held exclusively.
func Restore(ctx context.Context, w home.Worker, opt RestoreOptions) (*RestoreResult, error) {
	s, err := open(ctx, w, opt.Wait)
	if err != nil {
		return nil, err
	}
	defer s.close()
	from, err := s.resolve(opt.From)
	if err != nil {
		return nil, err
	}
	m, err := s.manifest(from)
	if err != nil {
		return nil, err
	}
	res := &RestoreResult{From: from}
	trees, closeTrees, err := s.restoreTrees(m, opt.Channel)
	defer closeTrees()
	if err != nil {
		return nil, err
	}
	var want []Entry
	if len(trees) == 1 {
		want = trees[0].entries // no copy
	} else {
		for _, t := range trees {
			want = append(want, t.entries...)
		}
	}
	if opt.DryRun {
		live, err := s.liveEntries(trees)
		if err != nil {
			return nil, err
		}
		res.Changes = compare(live, index(live), want, true)
		return res, nil
	}
	boxes, err := runs.LiveBoxesStrict(w)
	if err != nil {
		if !opt.Force {
			return nil, fmt.Errorf("worker %q: check for live boxes: %w", w.Name, err)
		}
		boxes = []runs.BoxInfo{{Worker: w.Name}} // unknown: restore as if a box were live
	}
	if len(boxes) > 0 && !opt.Force {
		return nil, errs.WithHint(errs.New(errs.ErrConflict, fmt.Sprintf("worker %q has a live box (run %s): refusing to restore under it", w.Name, boxes[0].Run)),
			"wait for the run to end, or use --force (the box keeps the old tree until it ends)")
	}
	if err := s.cleanup(); err != nil {
		return nil, err
	}
	// A store folder that is gone is put back like a gone channel store:
	// an empty one stands for it in the pre-restore snapshot (the undo).
	for _, t := range trees {
		if t.path == home.SnapStoreDir {
			if err := unix.Mkdirat(s.wdir, home.SnapStoreDir, 0o700); err != nil && err != unix.EEXIST {
				return nil, fmt.Errorf("make %s: %w", s.w.Store(), err)
			}
		}
	}
	pre, err := s.take(ctx, &opt.Options, LabelPreRestore, true)
	if err != nil {
		return nil, fmt.Errorf("pre-restore snapshot: %w", err)
	}
	res.PreRestore = pre.ID
	// The pre-restore take walked the live trees under the same lock: its
	// entries are the live state the change list compares with.
	live := inTrees(pre.walked, trees)
	pre.walked = nil
	liveIdx := index(live)
	res.Changes = compare(live, liveIdx, want, true)
	want = nil
	// Live inodes may be reused only when nothing can write into the old
	// tree after the swap: no box is live, and --force was not asked for.
	reuse := len(boxes) == 0 && !opt.Force
	// Stage every tree first, then swap them one after another: the store
	// and its channel stores change together, as near as renames allow.
	sg := newStager()
	if reuse {
		sg.pre, sg.preIdx = pre.ID, liveIdx
	}
	var serr error
	for i := range trees {
		t := &trees[i]
		t.staging = home.RestorePrefix + from + "-" + strconv.Itoa(i)
		if serr = s.stage(sg, t, from, reuse, opt.Progress); serr != nil {
			sg.pool.fail(serr) // skip what is still queued
			break
		}
	}
	if err := sg.close(); serr == nil {
		serr = err
	}
	if serr == nil {
		// dst was closed with the root level; sync through the worker folder.
		if err := unix.Syncfs(s.wdir); err != nil {
			serr = fmt.Errorf("sync restored tree: %w", err)
		}
	}
	if serr != nil {
		for i := range trees {
			if trees[i].made {
				removeAt(s.wdir, trees[i].staging)
			}
		}
		return res, serr
	}
	// Every swap first, back to back (the store and its channel stores
	// change together, as near as renames allow), then the old trees go.
	olds := make([]bool, len(trees))
	for i := range trees {
		old, err := s.swap(&trees[i])
		if err != nil {
			for j := i; j < len(trees); j++ {
				removeAt(s.wdir, trees[j].staging) // never swapped in
			}
			if i > 0 {
				var done []string
				for _, t := range trees[:i] {
					done = append(done, t.path)
				}
				err = errs.WithHint(fmt.Errorf("%w (%s restored, the rest not)", err, strings.Join(done, ", ")),
					"undo with `roster-snap restore "+s.w.Name+" --from "+pre.ID+"`, or run the restore again")
			}
			return res, err
		}
		olds[i] = old
	}
	for i := range trees {
		if !olds[i] {
			continue
		}
		kept, err := s.dispose(&trees[i], len(boxes) > 0)
		if err != nil {
			return res, err
		}
		if kept != "" {
			res.Trashed = append(res.Trashed, kept)
		}
	}
	// The restore record (record.go): what the restored files are, so the
	// next take links instead of copying them all. Only a cache: a failure
	// here costs that take time, never correctness.
	if recs, err := s.recordEntries(trees); err == nil {
		s.writeRecord(from, pre.ID, opt.now(), recs)
	}
	return res, nil
}

// recordEntries stats every restored regular file now that its names
// and ctime are final (the old trees are deleted or in .trash/; a reused
// inode is only reused when no box is live, so its old name is deleted
// here, never later) and pairs it with the snapshot inode it was
// restored from. The stats run on a pool, one walker opening folders.
func (s *session) recordEntries(trees []restoreTree) ([]Entry, error) {
	p := newPool()
	var werr error
	for ti := range trees {
		if werr = s.recordTree(p, &trees[ti]); werr != nil {
			p.fail(werr)
			break
		}
	}
	if err := p.wait(); werr == nil {
		werr = err
	}
	if werr != nil {
		return nil, werr
	}
	var out []Entry
	for ti := range trees {
		t := &trees[ti]
		for i := range t.entries {
			if t.rec[i].SnapIno != 0 {
				out = append(out, t.rec[i])
			}
		}
		t.rec = nil
	}
	return out, nil
}

// recordTree fills t.rec (per entry: the restored file as it is now, with
// its snapshot inode) for every regular file with a known snapshot inode
// and the metadata the snapshot gave it.
func (s *session) recordTree(p *pool, t *restoreTree) error {
	t.rec = make([]Entry, len(t.entries))
	root, err := openDirAt(t.parent, t.name)
	if err != nil {
		return err
	}
	type level struct {
		path string
		fd   int
		ref  *dirRef
	}
	newLevel := func(path string, fd int) level {
		return level{path: path, fd: fd, ref: p.newDirRef(func(bool) error { unix.Close(fd); return nil })}
	}
	stack := []level{newLevel(t.path, root)}
	defer func() {
		for i := len(stack) - 1; i >= 0; i-- {
			stack[i].ref.release()
		}
	}()
	for i := 1; i < len(t.entries); i++ {
		e := &t.entries[i]
		slash := strings.LastIndexByte(e.Path, '/')
		parent, name := e.Path[:slash], e.Path[slash+1:]
		for len(stack) > 1 && stack[len(stack)-1].path != parent {
			stack[len(stack)-1].ref.release()
			stack = stack[:len(stack)-1]
		}
		top := stack[len(stack)-1]
		if top.path != parent {
			return fmt.Errorf("%w: %s is not in walk order", ErrBadManifest, EscapeName(e.Path))
		}
		switch {
		case e.Type == TypeDir:
			fd, err := openDirAt(top.fd, name)
			if err != nil {
				return fmt.Errorf("open restored %s: %w", EscapeName(e.Path), err)
			}
			stack = append(stack, newLevel(e.Path, fd))
		case e.Type == TypeFile && t.sino[i] != 0:
			dir, i := top.fd, i
			top.ref.run(func(*[]byte) error {
				var st unix.Stat_t
				if unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
					return nil
				}
				now := entryOf(t.entries[i].Path, &st)
				if sameMeta(&now, &t.entries[i]) {
					now.SnapIno = t.sino[i]
					t.rec[i] = now
				}
				return nil
			})
		}
	}
	return nil
}

// restoreTrees picks the trees to restore from manifest m and opens their
// live parents.
func (s *session) restoreTrees(m *Manifest, channel string) ([]restoreTree, func(), error) {
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

// liveEntries walks the live trees a restore would replace.
func (s *session) liveEntries(trees []restoreTree) ([]Entry, error) {
	w := newWalker(nil, false)
	for _, t := range trees {
		fd, err := openDirAt(t.parent, t.name)
		if err == unix.ENOENT {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", t.path, err)
		}
		err = w.root(fd, t.path, t.path == home.SnapStoreDir, -1, "", -1)
		unix.Close(fd)
		if err != nil {
			return nil, err
		}
	}
	return w.entries, nil
}

// stager carries what staging several trees of one restore shares: the
// pool, and hardlink groups (a group may span the store and a channel
// store: its later names link to the first one made, in whichever
// staging tree that is).
type stager struct {
	pool   *pool
	roots  []int           // each staged tree's top folder, open until every tree is staged
	groups map[int]groupAt // hardlink group -> its first restored name
	pre    string          // the pre-restore snapshot ("" when live files are not reused)
	preIdx map[string]*Entry
}

type groupAt struct {
	root int    // index into roots
	rel  string // path below that tree's top
	sino uint64 // the snapshot inode its bytes are
}

func newStager() *stager {
	return &stager{pool: newPool(), groups: map[int]groupAt{}}
}

// close waits for the pool and closes the trees' top folders.
func (sg *stager) close() error {
	err := sg.pool.wait()
	for _, fd := range sg.roots {
		closeFd(fd)
	}
	sg.roots = nil
	return err
}

// stage copies tree t out of snapshot from into a new staging folder in
// the worker's folder: new inodes (hardlinks kept), with the manifest's
// owners, modes and times applied on descriptors. One walker makes the
// folders in manifest order; the files are linked or copied on the pool,
// and a folder's own metadata is applied once its entries are made.
//
// With reuse, a regular file whose live inode is provably the one the
// snapshot copied, untouched since (see reusable), is linked from the live
// tree instead of copied: the old tree is deleted after the swap, so the
// restored tree ends up the only owner of that inode. Live inodes are
// never shared with a snapshot (take never links a live file), so this
// never links a snapshot's inode into the store.
func (s *session) stage(sg *stager, t *restoreTree, from string, reuse bool, progress func(int)) error {
	snap, err := openDirAt(s.snaps, from)
	if err != nil {
		return err
	}
	defer unix.Close(snap)
	src, err := openPath(snap, t.path)
	if err != nil {
		return fmt.Errorf("snapshot %s: open %s: %w", from, t.path, err)
	}
	if err := unix.Mkdirat(s.wdir, t.staging, 0o700); err != nil {
		unix.Close(src)
		return fmt.Errorf("make %s: %w", t.staging, err)
	}
	t.made = true
	dst, err := openDirAt(s.wdir, t.staging)
	if err != nil {
		unix.Close(src)
		return err
	}
	rootFd, err := openDirAt(s.wdir, t.staging)
	if err != nil {
		unix.Close(src)
		unix.Close(dst)
		return err
	}
	ri := len(sg.roots)
	sg.roots = append(sg.roots, rootFd)
	t.sino = make([]uint64, len(t.entries))
	live, liveDev, pre := -1, uint64(0), -1
	if reuse {
		if fd, err := openDirAt(t.parent, t.name); err == nil {
			var st unix.Stat_t
			if unix.Fstat(fd, &st) == nil {
				live, liveDev = fd, st.Dev
			} else {
				unix.Close(fd)
			}
		}
		if sg.pre != "" {
			if fd, err := openDirAt(s.snaps, sg.pre); err == nil {
				if pfd, err := openPath(fd, t.path); err == nil {
					pre = pfd
				}
				unix.Close(fd)
			}
		}
	}
	type level struct {
		path string
		src  int
		dst  int
		live int // the same folder in the live tree; -1 if none (or not reusing)
		pre  int // the same folder in the pre-restore snapshot; -1 if none (or not reusing)
		ref  *dirRef
		jobs []int // files (entry indices) waiting to go to the pool as one operation
	}
	newLevel := func(path string, src, dst, live, pre int, e *Entry) level {
		ref := sg.pool.newDirRef(func(failed bool) error {
			var err error
			if !failed {
				if err = applyMeta(dst, e, e.Mtime); err != nil {
					err = fmt.Errorf("restore %s: %w", EscapeName(path), err)
				}
			}
			unix.Close(src)
			unix.Close(dst)
			closeFd(live)
			closeFd(pre)
			return err
		})
		return level{path: path, src: src, dst: dst, live: live, pre: pre, ref: ref}
	}
	// put restores entry i (a regular file) as name in level l: a link to
	// the live file when that provably holds the snapshot's bytes, else a
	// copy. It notes the snapshot inode the result holds.
	put := func(l level, i int, name string, buf *[]byte) error {
		e := &t.entries[i]
		if l.live >= 0 {
			if sino := reusable(l.live, l.pre, l.src, name, liveDev, e, sg.preIdx[e.Path]); sino != 0 && unix.Linkat(l.live, name, l.dst, name, 0) == nil {
				t.sino[i] = sino
				return nil
			}
		}
		sino, err := restoreFile(l.src, l.dst, name, e, buf)
		if err != nil {
			return fmt.Errorf("restore %s: %w", EscapeName(e.Path), err)
		}
		t.sino[i] = sino
		return nil
	}
	// flush queues a folder's waiting files as one operation (see batch).
	flush := func(l *level) {
		if len(l.jobs) == 0 {
			return
		}
		jobs, lv := l.jobs, *l
		l.jobs = nil
		l.ref.run(func(buf *[]byte) error {
			for _, i := range jobs {
				if sg.pool.failed.Load() {
					return nil
				}
				p := t.entries[i].Path
				if err := put(lv, i, p[strings.LastIndexByte(p, '/')+1:], buf); err != nil {
					return err
				}
			}
			return nil
		})
	}
	stack := []level{newLevel(t.path, src, dst, live, pre, &t.entries[0])}
	defer func() {
		for i := len(stack) - 1; i >= 0; i-- {
			flush(&stack[i])
			stack[i].ref.release()
		}
	}()
	if t.path == home.SnapStoreDir {
		if err := s.makeLocksMount(dst); err != nil {
			return err
		}
	}
	for i := 1; i < len(t.entries); i++ {
		if err := sg.pool.Err(); err != nil {
			return err
		}
		e := &t.entries[i]
		if progress != nil {
			progress(1)
		}
		slash := strings.LastIndexByte(e.Path, '/')
		parent, name := e.Path[:slash], e.Path[slash+1:]
		for len(stack) > 1 && stack[len(stack)-1].path != parent {
			flush(&stack[len(stack)-1])
			stack[len(stack)-1].ref.release()
			stack = stack[:len(stack)-1]
		}
		top := stack[len(stack)-1]
		if top.path != parent {
			return fmt.Errorf("%w: snapshot %s: %s is not in walk order", ErrBadManifest, from, EscapeName(e.Path))
		}
		switch e.Type {
		case TypeDir:
			if err := unix.Mkdirat(top.dst, name, 0o700); err != nil {
				return fmt.Errorf("restore %s: %w", EscapeName(e.Path), err)
			}
			d, err := openDirAt(top.dst, name)
			if err != nil {
				return err
			}
			sfd, err := openDirAt(top.src, name)
			if err != nil {
				unix.Close(d)
				return fmt.Errorf("snapshot %s: %s: %w", from, EscapeName(e.Path), err)
			}
			lfd, pfd := -1, -1
			if top.live >= 0 {
				if fd, err := openDirAt(top.live, name); err == nil {
					lfd = fd
				}
			}
			if top.pre >= 0 {
				if fd, err := openDirAt(top.pre, name); err == nil {
					pfd = fd
				}
			}
			stack = append(stack, newLevel(e.Path, sfd, d, lfd, pfd, e))
		case TypeSymlink:
			if err := unix.Symlinkat(e.Target, top.dst, name); err != nil {
				return fmt.Errorf("restore %s: %w", EscapeName(e.Path), err)
			}
			if err := applyLinkMeta(top.dst, name, e); err != nil {
				return fmt.Errorf("restore %s: %w", EscapeName(e.Path), err)
			}
		case TypeFile:
			if e.Group == 0 {
				// The common case, on the pool.
				l := &stack[len(stack)-1]
				if l.jobs = append(l.jobs, i); len(l.jobs) >= batchSize {
					flush(l)
				}
				continue
			}
			// Hardlink groups in order, on the walker: the first name is
			// made, the others link to it.
			relead := false
			if g, ok := sg.groups[e.Group]; ok {
				if unix.Linkat(sg.roots[g.root], g.rel, top.dst, name, 0) == nil {
					t.sino[i] = g.sino
					continue
				}
				relead = true // EMLINK: this name's inode takes the later ones
			}
			// A group's first name is always a fresh copy (never the live
			// inode, whose old names still count toward the link limit),
			// so every name of the group fits on one inode.
			var buf []byte
			sino, err := restoreFile(top.src, top.dst, name, e, &buf)
			if err != nil {
				return fmt.Errorf("restore %s: %w", EscapeName(e.Path), err)
			}
			t.sino[i] = sino
			if _, ok := sg.groups[e.Group]; !ok || relead {
				sg.groups[e.Group] = groupAt{root: ri, rel: e.Path[len(t.path)+1:], sino: t.sino[i]}
			}
		}
	}
	return nil
}

// reusable reports whether the live file name in live provably holds
// what the snapshot holds for e, so it can be linked into the restored
// tree instead of copied, and returns the snapshot inode whose bytes it
// holds (0: not reusable). It must be a regular file on the live tree's
// filesystem with e's mode, owner, size and mtime, and either
//
//   - the very inode and ctime the snapshot recorded as its source (the
//     kernel sets ctime on every write, chmod, chown, link or unlink and
//     no caller can set it: an equal ctime means untouched since), or
//   - the inode and ctime the pre-restore snapshot just recorded (pe),
//     when that snapshot's copy (in pre) is the very inode the restored
//     snapshot's copy (in src) is: snapshot inodes never change, so the
//     bytes are the same. This is what makes a second restore (an undo)
//     cheap, after the first gave every file a new ctime.
func reusable(live, pre, src int, name string, dev uint64, e, pe *Entry) uint64 {
	var st unix.Stat_t
	if unix.Fstatat(live, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return 0
	}
	if now := entryOf(e.Path, &st); st.Dev != dev || e.Type != TypeFile || !sameMeta(&now, e) {
		return 0
	}
	var sst unix.Stat_t
	if unix.Fstatat(src, name, &sst, unix.AT_SYMLINK_NOFOLLOW) != nil || sst.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0
	}
	if !e.Unstable && e.Ino != 0 && st.Ino == e.Ino && st.Ctim.Nano() == e.Ctime {
		return sst.Ino
	}
	if pre < 0 || pe == nil || pe.Type != TypeFile || pe.Unstable || pe.Ino != st.Ino || pe.Ctime != st.Ctim.Nano() {
		return 0
	}
	var pst unix.Stat_t
	if unix.Fstatat(pre, name, &pst, unix.AT_SYMLINK_NOFOLLOW) != nil || pst.Mode&unix.S_IFMT != unix.S_IFREG ||
		pst.Ino != sst.Ino || pst.Dev != sst.Dev {
		return 0
	}
	return sst.Ino
}

// makeLocksMount makes the store's .locks mount point in a restored store:
// an empty folder with the owner and mode the live one has (root 0755 if
// there is none).
func (s *session) makeLocksMount(dst int) error {
	uid, gid, mode := 0, 0, uint32(0o755)
	var st unix.Stat_t
	haveTimes := false
	if live, err := openDirAt(s.wdir, home.SnapStoreDir); err == nil {
		if unix.Fstatat(live, home.StoreLocksName, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			uid, gid, mode = int(st.Uid), int(st.Gid), st.Mode&0o7777
			haveTimes = true
		}
		unix.Close(live)
	}
	if err := unix.Mkdirat(dst, home.StoreLocksName, 0o700); err != nil {
		return fmt.Errorf("make %s: %w", home.StoreLocksName, err)
	}
	fd, err := openDirAt(dst, home.StoreLocksName)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Fchown(fd, uid, gid); err != nil {
		return err
	}
	if err := unix.Fchmod(fd, mode); err != nil {
		return err
	}
	if haveTimes {
		return futimens(fd, st.Atim.Nano(), st.Mtim.Nano())
	}
	return nil
}

// restoreFile copies one snapshot file into a new inode of the staging
// tree. It returns the snapshot file's inode.
func restoreFile(src, dst int, name string, e *Entry, buf *[]byte) (uint64, error) {
	if copyFault != nil {
		if err := copyFault(e.Path); err != nil {
			return 0, err
		}
	}
	sfd, err := openRead(src, name)
	if err != nil {
		return 0, err
	}
	defer unix.Close(sfd)
	var st unix.Stat_t
	if err := unix.Fstat(sfd, &st); err != nil {
		return 0, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, fmt.Errorf("not a regular file in the snapshot")
	}
	dfd, err := unix.Openat(dst, name, openNewFlags, 0o600)
	if err != nil {
		return 0, err
	}
	defer unix.Close(dfd)
	if err := copyData(sfd, dfd, st.Size, buf); err != nil {
		return 0, err
	}
	return st.Ino, applyMeta(dfd, e, e.Mtime)
}

// openPath opens a folder below dir, one component at a time, never
// following a symlink.
func openPath(dir int, path string) (int, error) {
	cur := dir
	for _, c := range strings.Split(path, "/") {
		fd, err := openDirAt(cur, c)
		if cur != dir {
			unix.Close(cur)
		}
		if err != nil {
			return -1, err
		}
		cur = fd
	}
	return cur, nil
}

// swap puts the staged tree in place with one renameat2(RENAME_EXCHANGE);
// the old tree is then at the staging name (old reports whether there was
// one).
func (s *session) swap(t *restoreTree) (old bool, err error) {
	err = unix.Renameat2(s.wdir, t.staging, t.parent, t.name, unix.RENAME_EXCHANGE)
	if err == unix.ENOENT {
		err = unix.Renameat2(s.wdir, t.staging, t.parent, t.name, unix.RENAME_NOREPLACE)
		if err == nil {
			return false, syncBoth(s.wdir, t.parent)
		}
	}
	if err != nil {
		return false, fmt.Errorf("swap the restored %s into place: %w", t.path, err)
	}
	return true, syncBoth(s.wdir, t.parent)
}

// dispose deletes the old tree a swap left at the staging name, or keeps
// it in .trash/ when a box may still have it mounted. It returns the
// .trash name of a kept tree.
func (s *session) dispose(t *restoreTree, boxLive bool) (string, error) {
	if boxLive {
		trash, err := s.trash()
		if err != nil {
			return "", err
		}
		defer unix.Close(trash)
		// The staging name is unique in the worker folder, not in .trash/
		// (an earlier forced restore of the same snapshot left its old
		// tree there): never replace one, pick the next free name.
		base := oldTreePrefix + t.staging[len(home.RestorePrefix):]
		name := base
		for i := 1; ; i++ {
			err := unix.Renameat2(s.wdir, t.staging, trash, name, unix.RENAME_NOREPLACE)
			if err == nil {
				break
			}
			if err != unix.EEXIST || i > 1000 {
				return "", fmt.Errorf("move the old %s to %s: %w", t.path, home.SnapTrash, err)
			}
			name = fmt.Sprintf("%s.%d", base, i)
		}
		return name, syncBoth(s.wdir, trash)
	}
	if err := removeAt(s.wdir, t.staging); err != nil {
		return "", errs.WithHint(fmt.Errorf("delete the old %s (the restore itself is done): %w", t.path, err),
			"remove what stops it (an immutable file: chattr -i), then run `roster-snap take "+s.w.Name+"`, which finishes deleting it")
	}
	return "", nil
}

func syncBoth(a, b int) error {
	if err := unix.Fsync(a); err != nil {
		return err
	}
	if a != b {
		return unix.Fsync(b)
	}
	return nil
}
