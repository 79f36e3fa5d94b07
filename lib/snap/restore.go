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
	Path    string // restore only this file or folder, below the store (or Channel's store); see CleanRestorePath
	DryRun  bool   // only list the changes the restore would make
	Force   bool   // restore even while a box of the worker is live
}

// RestoreResult is what a restore did (or, dry, would do).
type RestoreResult struct {
	From       string   // the snapshot restored
	PreRestore string   // the snapshot of the state before (the undo); "" on a dry run
	Changes    []Change // the changes to the live trees
	Trashed    []string // old trees kept in .trash/ because a box was live
	Put        bool     // restore --path: the path was not in the live tree (the restore puts it back)
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

// Restore replaces worker w's store (and channel stores), or one path of
// it (restore_path.go), with a snapshot's copy (docs/store.md, "Restore"),
// under the store lock held exclusively. Its steps: resolve the snapshot
// and its trees, take the pre-restore snapshot (the undo), stage every
// tree, swap them all in, keep the restore's change list with the undo,
// dispose of the old trees, and write the restore record.
func Restore(ctx context.Context, w home.Worker, opt RestoreOptions) (*RestoreResult, error) {
	var rel string
	if opt.Path != "" {
		var err error
		if rel, err = CleanRestorePath(opt.Path, opt.Channel == ""); err != nil {
			return nil, err
		}
	}
	s, err := open(ctx, w, opt.Wait)
	if err != nil {
		return nil, err
	}
	defer s.close()
	from, err := s.resolve(opt.From)
	if err != nil {
		return nil, err
	}
	res := &RestoreResult{From: from}
	trees, scope, closeTrees, err := s.restoreScope(res, opt, rel)
	defer closeTrees()
	if err != nil {
		return nil, err
	}
	if opt.DryRun {
		live, err := s.liveEntries(trees)
		if err != nil {
			return nil, err
		}
		res.Changes = compare(live, index(live), wanted(trees), true)
		return res, nil
	}
	boxes, err := s.checkBoxes(opt.Force)
	if err != nil {
		return nil, err
	}
	if err := s.cleanup(); err != nil {
		return nil, err
	}
	opt.mark("locked, snapshot read")
	pre, live, err := s.preTake(ctx, &opt.Options, trees)
	if err != nil {
		return nil, err
	}
	res.PreRestore = pre
	liveIdx := index(live)
	res.Changes = compare(live, liveIdx, wanted(trees), true)
	opt.mark("compared")
	// Live inodes may be reused only when nothing can write into the old
	// tree after the swap: no box is live, and --force was not asked for.
	if err := s.stageTrees(&opt, trees, from, pre, liveIdx, len(boxes) == 0 && !opt.Force); err != nil {
		return res, err
	}
	opt.mark("staged")
	kerr, err := s.swapIn(&opt, res, trees, len(boxes) > 0)
	if err != nil {
		return res, err
	}
	// The restore record (record.go): what the restored files are, so the
	// next take links instead of copying them all. Only a cache: a failure
	// here costs that take time, never correctness.
	if recs, err := s.recordEntries(trees); err == nil {
		s.writeRecord(from, pre, opt.now(), scope, recs)
	}
	opt.mark("restore record written")
	if kerr != nil {
		return res, fmt.Errorf("%w (the restore itself is done)", kerr)
	}
	return res, nil
}

// restoreScope is the live trees snapshot res.From puts back, each with
// its entries: every tree of the snapshot, Channel's store alone, or,
// with a path (rel, cleaned), the one tree narrowed to it (res.Put then
// says whether the path is new). scope is what the restore record names.
// done closes the trees' folders, also on error.
func (s *session) restoreScope(res *RestoreResult, opt RestoreOptions, rel string) (trees []restoreTree, scope []string, done func(), err error) {
	m, err := s.manifest(res.From)
	if err != nil {
		return nil, nil, func() {}, err
	}
	trees, closeTrees, err := s.restoreTrees(m, opt.Channel, opt.Path)
	if err != nil {
		return nil, nil, closeTrees, err
	}
	if opt.Path == "" {
		for _, t := range trees {
			scope = append(scope, t.path)
		}
		return trees, scope, closeTrees, nil
	}
	nt, put, closeNarrow, err := s.narrowTree(trees[0], rel, res.From)
	done = func() { closeNarrow(); closeTrees() }
	if err != nil {
		return nil, nil, done, err
	}
	res.Put = put
	return []restoreTree{nt}, []string{trees[0].path + "/" + rel}, done, nil
}

// stageTrees stages every tree out of snapshot from (stageAll), reusing
// the live inodes the pre-restore snapshot pre shares with it when reuse.
// A failure changed nothing, and the undo's change list says so.
func (s *session) stageTrees(opt *RestoreOptions, trees []restoreTree, from, pre string, liveIdx map[string]*Entry, reuse bool) error {
	sg := newStager()
	if reuse {
		sg.pre, sg.preIdx = pre, liveIdx
		var st unix.Stat_t
		if unix.Fstat(s.snaps, &st) == nil {
			sg.snapDev, sg.dino = st.Dev, trustDirInodes(s.snaps)
		}
	}
	total := 0
	for i := range trees {
		total += len(trees[i].entries)
	}
	opt.phase(s.w.Name, "restoring", total)
	if err := s.stageAll(sg, trees, from, reuse, opt.Progress); err != nil {
		s.writeRestoreChanges(pre, nil, nil) // it changed nothing
		return err
	}
	return nil
}

// swapIn puts the staged trees in place of the live ones: what the
// snapshot skipped kept, the restore's change list written with the
// pre-restore snapshot, the restored folder's times put back (--path) and
// the old trees disposed of (to .trash/ when boxLive). kerr is the change
// list's error, which fails the restore only once it is done.
func (s *session) swapIn(opt *RestoreOptions, res *RestoreResult, trees []restoreTree, boxLive bool) (kerr, err error) {
	pre := res.PreRestore
	var times folderTimes
	if opt.Path != "" {
		times = keepTimes(trees[0].parent)
	}
	// What the snapshot skipped stays as it is (restore_keep.go): listed
	// before the swap, moved from the old trees into the restored ones
	// after it, whatever the swaps' outcome.
	keep, err := s.writeKeep(trees)
	if err != nil {
		for i := range trees {
			removeAt(s.wdir, trees[i].staging)
		}
		s.writeRestoreChanges(pre, nil, nil) // it changed nothing
		return nil, err
	}
	olds, err := s.swapAll(trees, pre)
	opt.mark("swapped")
	if afterSwap != nil {
		afterSwap()
	}
	if keep != nil {
		if merr := s.keepMoves(keep); merr != nil && err == nil {
			err = merr
		}
	}
	// The restore's own change list goes with its pre-restore snapshot
	// (restore_changes.go), for the trees it swapped in.
	kerr = s.writeRestoreChanges(pre, res.Changes, trees[:len(olds)])
	if err != nil {
		return kerr, err
	}
	if err := times.put(); err != nil {
		return kerr, err
	}
	if err := s.disposeAll(res, trees, olds, boxLive); err != nil {
		return kerr, err
	}
	opt.mark("old trees deleted")
	return kerr, nil
}

// afterSwap, when set (by a test), runs right after the swaps: a crash
// point between them and the moves of what the restore keeps.
var afterSwap func()

// wanted is every entry the restored trees will hold, in walk order.
func wanted(trees []restoreTree) []Entry {
	if len(trees) == 1 {
		return trees[0].entries // no copy
	}
	var want []Entry
	for _, t := range trees {
		want = append(want, t.entries...)
	}
	return want
}

// checkBoxes refuses a restore under a live box of the worker unless
// force; it returns the live boxes (one standing for "unknown" when force
// and they cannot be listed).
func (s *session) checkBoxes(force bool) ([]runs.BoxInfo, error) {
	boxes, err := runs.LiveBoxesStrict(s.w)
	if err != nil {
		if !force {
			return nil, fmt.Errorf("worker %q: check for live boxes: %w", s.w.Name, err)
		}
		boxes = []runs.BoxInfo{{Worker: s.w.Name}} // unknown: restore as if a box were live
	}
	if len(boxes) > 0 && !force {
		return nil, errs.WithHint(errs.New(errs.ErrConflict, fmt.Sprintf("worker %q has a live box (run %s): refusing to restore under it", s.w.Name, boxes[0].Run)),
			"wait for the run to end, or use --force (the box keeps the old tree until it ends)")
	}
	return boxes, nil
}

// preTake takes the pre-restore snapshot and returns its id and the live
// entries of trees it walked (under the same lock: the live state the
// change list compares with).
func (s *session) preTake(ctx context.Context, opt *Options, trees []restoreTree) (string, []Entry, error) {
	// A store folder that is gone is put back like a gone channel store:
	// an empty one stands for it in the pre-restore snapshot (the undo).
	for _, t := range trees {
		if t.path == home.SnapStoreDir {
			if err := unix.Mkdirat(s.wdir, home.SnapStoreDir, 0o700); err != nil && err != unix.EEXIST {
				return "", nil, fmt.Errorf("make %s: %w", s.w.Store(), err)
			}
		}
	}
	pre, err := s.take(ctx, opt, LabelPreRestore, true)
	if err != nil {
		return "", nil, fmt.Errorf("pre-restore snapshot: %w", err)
	}
	return pre.ID, inTrees(pre.walked, trees), nil
}

// stageAll stages every tree (see stage) before any is swapped: the store
// and its channel stores change together, as near as renames allow. On
// failure it removes the staging trees it made.
func (s *session) stageAll(sg *stager, trees []restoreTree, from string, reuse bool, progress func(int)) error {
	var serr error
	for i := range trees {
		t := &trees[i]
		t.staging = home.RestorePrefix + from + "-" + strconv.Itoa(i)
		if serr = s.stage(sg, t, from, reuse, progress); serr != nil {
			sg.pool.fail(serr) // skip what is still queued
			break
		}
	}
	if err := sg.close(); serr == nil {
		serr = err
	}
	if serr == nil {
		// Every staged copy and folder is synced (restoreFile and
		// finishDir on the pool's syncers, many at once, all done when
		// sg.close returned nil): what is left is the staging folders'
		// names in the worker folder, then the swaps. Never syncfs: its
		// cost would grow with every other writer's dirty data.
		if err := unix.Fsync(s.wdir); err != nil {
			serr = fmt.Errorf("sync restored tree: %w", err)
		}
	}
	if serr != nil {
		for i := range trees {
			if trees[i].made {
				removeAt(s.wdir, trees[i].staging)
			}
		}
	}
	return serr
}

// swapAll swaps every staged tree in, back to back; olds[i] tells whether
// tree i had an old tree, now at its staging name. A failed swap removes
// the staging trees not swapped in and hints at the undo (pre); olds
// then covers the trees swapped in before it.
func (s *session) swapAll(trees []restoreTree, pre string) ([]bool, error) {
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
					"undo with `roster-snap restore "+s.w.Name+" --from "+pre+"`, or run the restore again")
			}
			return olds[:i], err
		}
		olds[i] = old
	}
	return olds, nil
}

// disposeAll disposes of every old tree the swaps left (see dispose),
// noting in res the ones kept in .trash/.
func (s *session) disposeAll(res *RestoreResult, trees []restoreTree, olds []bool, boxLive bool) error {
	for i := range trees {
		if !olds[i] {
			continue
		}
		kept, err := s.dispose(&trees[i], boxLive)
		if err != nil {
			return err
		}
		if kept != "" {
			res.Trashed = append(res.Trashed, kept)
		}
	}
	return nil
}

// liveEntries walks the live trees a restore would replace.
func (s *session) liveEntries(trees []restoreTree) ([]Entry, error) {
	w := newWalker(nil, false)
	for _, t := range trees {
		if t.entries[0].Type != TypeDir || t.path != treeOf(t.path) {
			// restore --path: the live one may be a file, or gone.
			leaf, done, err := liveLeaf(t.parent, t.name, t.path)
			if err != nil {
				return nil, err
			}
			if done {
				w.entries = append(w.entries, leaf...)
				continue
			}
		}
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
