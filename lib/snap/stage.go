package snap

import (
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/home"
)

// stager carries what staging several trees of one restore shares: the
// pool, and hardlink groups (a group may span the store and a channel
// store: its later names link to the first one made, in whichever
// staging tree that is).
type stager struct {
	pool    *pool
	roots   []int           // each staged tree's top folder, open until every tree is staged
	groups  map[int]groupAt // hardlink group -> its first restored name
	pre     string          // the pre-restore snapshot ("" when live files are not reused)
	preIdx  map[string]*Entry
	dino    bool   // the snapshots' filesystem gives each entry's inode in getdents (inoTrusted)
	snapDev uint64 // the snapshots' filesystem (reuse only)
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
	if t.entries[0].Type != TypeDir {
		return s.stageLeaf(t, from) // restore --path of a file or symlink
	}
	ts := &treeStage{sg: sg, t: t, from: from}
	top, err := ts.openTop(s, reuse)
	if err != nil {
		return err
	}
	ts.stack = []stageLevel{top}
	defer func() {
		for i := len(ts.stack) - 1; i >= 0; i-- {
			ts.flush(&ts.stack[i])
			ts.stack[i].ref.release()
		}
	}()
	if t.path == home.SnapStoreDir {
		if err := s.makeLocksMount(top.dst); err != nil {
			return err
		}
	}
	for i := 1; i < len(t.entries); i++ {
		if err := sg.pool.Err(); err != nil {
			return err
		}
		if progress != nil {
			progress(1)
		}
		if err := ts.entry(i); err != nil {
			return err
		}
	}
	return nil
}

// treeStage is the staging of one tree: the walker's stack of open
// folders, from the tree's top to the folder of the entry at hand.
type treeStage struct {
	sg      *stager
	t       *restoreTree
	from    string
	ri      int    // the tree's top folder in sg.roots
	liveDev uint64 // the live tree's filesystem (reuse only)
	stack   []stageLevel
}

// stageLevel is one open folder of a staging walk.
type stageLevel struct {
	path string
	src  int
	dst  int
	live int // the same folder in the live tree; -1 if none (or not reusing)
	pre  int // the same folder in the pre-restore snapshot; -1 if none (or not reusing)
	ref  *dirRef
	jobs []int         // files (entry indices) waiting to go to the pool as one operation
	inos *folderInodes // src's regular files and their inodes (reuse only; nil: fstatat each)
	pins *folderInodes // pre's, likewise
}

// openTop makes the staging folder and opens the tree's top level: in
// the snapshot, the staging folder, and (with reuse) the live tree and
// the pre-restore snapshot's copy of it.
func (ts *treeStage) openTop(s *session, reuse bool) (stageLevel, error) {
	t, sg := ts.t, ts.sg
	snap, err := openDirAt(s.snaps, ts.from)
	if err != nil {
		return stageLevel{}, err
	}
	defer unix.Close(snap)
	src, err := openPath(snap, t.path)
	if err != nil {
		return stageLevel{}, fmt.Errorf("snapshot %s: open %s: %w", ts.from, t.path, err)
	}
	if err := unix.Mkdirat(s.wdir, t.staging, 0o700); err != nil {
		unix.Close(src)
		return stageLevel{}, fmt.Errorf("make %s: %w", t.staging, err)
	}
	t.made = true
	dst, err := openDirAt(s.wdir, t.staging)
	if err != nil {
		unix.Close(src)
		return stageLevel{}, err
	}
	rootFd, err := openDirAt(s.wdir, t.staging)
	if err != nil {
		unix.Close(src)
		unix.Close(dst)
		return stageLevel{}, err
	}
	ts.ri = len(sg.roots)
	sg.roots = append(sg.roots, rootFd)
	t.sino = make([]uint64, len(t.entries))
	live, pre := -1, -1
	if reuse {
		if fd, err := openDirAt(t.parent, t.name); err == nil {
			var st unix.Stat_t
			if unix.Fstat(fd, &st) == nil {
				live, ts.liveDev = fd, st.Dev
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
	return ts.newLevel(t.path, src, dst, live, pre, &t.entries[0]), nil
}

// newLevel is an open folder whose descriptors are closed, and whose
// metadata (e's) is applied, once the pool is done with its entries.
func (ts *treeStage) newLevel(path string, src, dst, live, pre int, e *Entry) stageLevel {
	p := ts.sg.pool
	ref := p.newDirRef(func(failed bool) error {
		unix.Close(src)
		closeFd(live)
		closeFd(pre)
		if err := p.finishDir(dst, e, e.Mtime, failed); err != nil {
			return fmt.Errorf("restore %s: %w", EscapeName(path), err)
		}
		return nil
	})
	l := stageLevel{path: path, src: src, dst: dst, live: live, pre: pre, ref: ref}
	if live >= 0 {
		l.inos = listInodes(src, ts.sg.dino, 0)
		l.pins = listInodes(pre, ts.sg.dino, ts.sg.snapDev)
	}
	return l
}

// folderInodes is a snapshot folder's regular files with their inode
// numbers, read from one getdents pass when a batch of the folder's
// files first needs them (on the pool; the others wait for it): reusable
// needs the snapshot inode of each file it links from the live tree, and
// one folder read instead of an fstatat per file saves one system call
// of the staging's two per file (100,000 on the bench's store; ext4's
// lookup of a name scans its folder's block).
//
// Snapshot folders are made by take and never change, so what the read
// lists is what an fstatat would find. The inodes are trusted only on
// the filesystems whose getdents gives the inode fstatat does
// (inoTrusted); elsewhere the stager never makes one.
type folderInodes struct {
	once sync.Once
	src  int
	dev  uint64            // nonzero: trust the listing only if src is on this device
	inos map[string]uint64 // nil: the read failed or gave no types: fstatat each
}

// listInodes is a folderInodes for snapshot folder fd when trusted
// (inoTrusted, checked once for the snapshots' filesystem), else nil:
// then its users fstatat each file. dev, if nonzero, is the device fd
// must be on for its listing to be used.
func listInodes(fd int, trusted bool, dev uint64) *folderInodes {
	if fd < 0 || !trusted {
		return nil
	}
	return &folderInodes{src: fd, dev: dev}
}

// ino is name's inode when getdents listed it as a regular file (ok
// false: fstatat it instead; ino 0 with ok: not a regular file there).
func (f *folderInodes) ino(name string) (ino uint64, ok bool) {
	if f == nil {
		return 0, false
	}
	f.once.Do(f.read)
	if f.inos == nil {
		return 0, false
	}
	return f.inos[name], true
}

func (f *folderInodes) read() {
	fd, err := unix.Openat(f.src, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if f.dev != 0 {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Dev != f.dev {
			return
		}
	}
	buf := direntBufs.Get().(*[]byte)
	ents, err := readEntries(fd, *buf)
	direntBufs.Put(buf)
	if err != nil {
		return
	}
	m := make(map[string]uint64, len(ents))
	for _, e := range ents {
		switch e.typ {
		case unix.DT_UNKNOWN:
			return // this folder's types are not given: fstatat each
		case unix.DT_REG:
			if e.ino != 0 {
				m[e.name] = e.ino
			}
		}
	}
	f.inos = m
}

// trustDirInodes is inoTrusted; tests turn it off to run the fstatat way.
var trustDirInodes = inoTrusted

// inoTrusted reports whether the filesystem of the folder fd is one whose
// getdents gives every entry's type and the inode number fstatat gives
// (ext4, XFS, tmpfs, Btrfs within a subvolume; a bind mount changes
// neither). Overlayfs, FUSE and network filesystems may map inode
// numbers on stat only, so they are not trusted: there staging stats.
func inoTrusted(fd int) bool {
	var fs unix.Statfs_t
	if unix.Fstatfs(fd, &fs) != nil {
		return false
	}
	switch int64(fs.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.TMPFS_MAGIC, unix.BTRFS_SUPER_MAGIC:
		return true
	}
	return false
}

// entry stages entry i, in the folder on top of the stack once the
// folders it is not in are closed.
func (ts *treeStage) entry(i int) error {
	e := &ts.t.entries[i]
	slash := strings.LastIndexByte(e.Path, '/')
	parent, name := e.Path[:slash], e.Path[slash+1:]
	for len(ts.stack) > 1 && ts.stack[len(ts.stack)-1].path != parent {
		ts.flush(&ts.stack[len(ts.stack)-1])
		ts.stack[len(ts.stack)-1].ref.release()
		ts.stack = ts.stack[:len(ts.stack)-1]
	}
	top := ts.stack[len(ts.stack)-1]
	if top.path != parent {
		return fmt.Errorf("%w: snapshot %s: %s is not in walk order", ErrBadManifest, ts.from, EscapeName(e.Path))
	}
	switch e.Type {
	case TypeDir:
		return ts.dir(top, name, e)
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
			l := &ts.stack[len(ts.stack)-1]
			if l.jobs = append(l.jobs, i); len(l.jobs) >= batchSize {
				ts.flush(l)
			}
			return nil
		}
		return ts.grouped(top, i, name)
	}
	return nil
}

// dir makes folder e in top and pushes it, with the same folder of the
// snapshot, the live tree and the pre-restore snapshot.
func (ts *treeStage) dir(top stageLevel, name string, e *Entry) error {
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
		return fmt.Errorf("snapshot %s: %s: %w", ts.from, EscapeName(e.Path), err)
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
	ts.stack = append(ts.stack, ts.newLevel(e.Path, sfd, d, lfd, pfd, e))
	return nil
}

// grouped restores entry i, a name of a hardlink group, on the walker and
// in order: the group's first name is made, the others link to it.
func (ts *treeStage) grouped(top stageLevel, i int, name string) error {
	t, sg := ts.t, ts.sg
	e := &t.entries[i]
	relead := false
	if g, ok := sg.groups[e.Group]; ok {
		if unix.Linkat(sg.roots[g.root], g.rel, top.dst, name, 0) == nil {
			t.sino[i] = g.sino
			return nil
		}
		relead = true // EMLINK: this name's inode takes the later ones
	}
	// A group's first name is always a fresh copy (never the live
	// inode, whose old names still count toward the link limit),
	// so every name of the group fits on one inode.
	var buf []byte
	sino, err := restoreFile(sg.pool, top.src, top.dst, name, e, &buf)
	if err != nil {
		return fmt.Errorf("restore %s: %w", EscapeName(e.Path), err)
	}
	t.sino[i] = sino
	if _, ok := sg.groups[e.Group]; !ok || relead {
		sg.groups[e.Group] = groupAt{root: ts.ri, rel: e.Path[len(t.path)+1:], sino: t.sino[i]}
	}
	return nil
}

// flush queues a folder's waiting files as one operation (see batch).
func (ts *treeStage) flush(l *stageLevel) {
	if len(l.jobs) == 0 {
		return
	}
	jobs, lv := l.jobs, *l
	l.jobs = nil
	l.ref.run(func(buf *[]byte) error {
		for _, i := range jobs {
			if ts.sg.pool.failed.Load() {
				return nil
			}
			p := ts.t.entries[i].Path
			if err := ts.put(lv, i, p[strings.LastIndexByte(p, '/')+1:], buf); err != nil {
				return err
			}
		}
		return nil
	})
}

// put restores entry i (a regular file) as name in level l: a link to
// the live file when that provably holds the snapshot's bytes, else a
// copy. It notes the snapshot inode the result holds. It runs on the pool.
func (ts *treeStage) put(l stageLevel, i int, name string, buf *[]byte) error {
	t := ts.t
	e := &t.entries[i]
	if l.live >= 0 {
		if sino := reusable(l.live, l.pre, l.src, l.inos, l.pins, name, ts.liveDev, ts.sg.snapDev, e, ts.sg.preIdx[e.Path]); sino != 0 && unix.Linkat(l.live, name, l.dst, name, 0) == nil {
			t.sino[i] = sino
			return nil
		}
	}
	sino, err := restoreFile(ts.sg.pool, l.src, l.dst, name, e, buf)
	if err != nil {
		return fmt.Errorf("restore %s: %w", EscapeName(e.Path), err)
	}
	t.sino[i] = sino
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
//
// The check and put's link are two steps, by name: in between, the name
// could be swapped or the inode written. No writer the store has can do
// it: reuse is only chosen when no box of the worker is live (and never
// with --force), the store lock is held exclusively throughout, and a
// box's launch holds it shared while it makes its mounts, so no box
// starts, mounts the old tree or writes into it until the restore is done
// and the old tree deleted. What the store holds is hostile but still: a
// symlink, FIFO or device fails the type check (fstatat and linkat never
// follow a symlink), a bind mount of another filesystem the device check;
// a hardlink group is never reused (grouped copies its first name). Nor
// is the live inode the pre-restore snapshot's: a take links only
// snapshot inodes, never a live one, so a reused inode ends up in the
// restored tree alone, and the undo's copy is a different inode. A
// change by a root process on the host inside that window is not guarded
// against (as with any file root rewrites during a restore); if it moved
// the size or mtime, recordTree leaves the file out of the restore record
// and the next take compares it rather than trusting it.
func reusable(live, pre, src int, inos, pins *folderInodes, name string, dev, snapDev uint64, e, pe *Entry) uint64 {
	var st unix.Stat_t
	if unix.Fstatat(live, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return 0
	}
	if now := entryOf(e.Path, &st); st.Dev != dev || e.Type != TypeFile || !sameMeta(&now, e) {
		return 0
	}
	// The snapshot's copy: a regular file, and its inode (from the
	// folder's getdents where trusted, see folderInodes).
	sino, listed := inos.ino(name)
	if !listed {
		var sst unix.Stat_t
		if unix.Fstatat(src, name, &sst, unix.AT_SYMLINK_NOFOLLOW) != nil || sst.Mode&unix.S_IFMT != unix.S_IFREG {
			return 0
		}
		sino = sst.Ino
	}
	if sino == 0 {
		return 0
	}
	if !e.Unstable && e.Ino != 0 && st.Ino == e.Ino && st.Ctim.Nano() == e.Ctime {
		return sino
	}
	if pre < 0 || pe == nil || pe.Type != TypeFile || pe.Unstable || pe.Ino != st.Ino || pe.Ctime != st.Ctim.Nano() {
		return 0
	}
	// The pre-restore snapshot's copy is the snapshot's inode (from its
	// folder's getdents where trusted and on the snapshots' device).
	if pino, listed := pins.ino(name); listed {
		if pino != sino {
			sino = 0
		}
		return sino
	}
	var pst unix.Stat_t
	if unix.Fstatat(pre, name, &pst, unix.AT_SYMLINK_NOFOLLOW) != nil || pst.Mode&unix.S_IFMT != unix.S_IFREG ||
		pst.Ino != sino || pst.Dev != snapDev {
		return 0
	}
	return sino
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
		if err := futimens(fd, st.Atim.Nano(), st.Mtim.Nano()); err != nil {
			return err
		}
	}
	return unix.Fsync(fd)
}

// restoreFile copies one snapshot file into a new inode of the staging
// tree, synced on p's syncers. It returns the snapshot file's inode.
func restoreFile(p *pool, src, dst int, name string, e *Entry, buf *[]byte) (uint64, error) {
	return restoreFileAs(p, src, name, dst, name, e, buf)
}

// restoreFileAs is restoreFile from srcName to a new dstName; with p nil
// it syncs the copy itself before it returns.
func restoreFileAs(p *pool, src int, srcName string, dst int, dstName string, e *Entry, buf *[]byte) (uint64, error) {
	if copyFault != nil {
		if err := copyFault(e.Path); err != nil {
			return 0, err
		}
	}
	sfd, err := openRead(src, srcName)
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
	dfd, err := unix.Openat(dst, dstName, openNewFlags, 0o600)
	if err != nil {
		return 0, err
	}
	if err := copyData(sfd, dfd, st.Size, buf); err != nil {
		unix.Close(dfd)
		return 0, err
	}
	if err := applyMeta(dfd, e, e.Mtime); err != nil {
		unix.Close(dfd)
		return 0, err
	}
	if p == nil {
		err := unix.Fsync(dfd)
		unix.Close(dfd)
		return st.Ino, err
	}
	// Durable before the staging tree is swapped in (stageAll, after the
	// pool's wait).
	p.syncClose(dfd, e.Path)
	return st.Ino, nil
}
