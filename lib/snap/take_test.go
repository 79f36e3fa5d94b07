package snap

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
)

func TestUnchangedFileSharesInodeChangedGetsNew(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	write(t, filepath.Join(w.Store(), "a.txt"), "alpha", 0o644)
	write(t, filepath.Join(w.Store(), "d/b.txt"), "beta", 0o600)
	o := opts(10)
	r1 := take(t, w, o)
	if r1.ID == "" {
		t.Fatal("first take made no snapshot")
	}
	if got, want := treeState(t, filepath.Join(w.Snapshot(r1.ID), "store")), treeState(t, w.Store()); got != want {
		t.Fatalf("snapshot differs from store:\n%s\nwant\n%s", got, want)
	}
	write(t, filepath.Join(w.Store(), "d/b.txt"), "beta two", 0o600)
	r2 := take(t, w, o)
	if r2.ID == "" || r2.ID == r1.ID {
		t.Fatalf("second take: %+v", r2)
	}
	if inode(t, filepath.Join(w.Snapshot(r1.ID), "store/a.txt")) != inode(t, filepath.Join(w.Snapshot(r2.ID), "store/a.txt")) {
		t.Error("unchanged file not shared between snapshots")
	}
	if inode(t, filepath.Join(w.Snapshot(r1.ID), "store/d/b.txt")) == inode(t, filepath.Join(w.Snapshot(r2.ID), "store/d/b.txt")) {
		t.Error("changed file shares the old inode")
	}
	if inode(t, filepath.Join(w.Snapshot(r2.ID), "store/d/b.txt")) == inode(t, filepath.Join(w.Store(), "d/b.txt")) {
		t.Error("snapshot links the live store file")
	}
	data, _ := os.ReadFile(filepath.Join(w.Snapshot(r1.ID), "store/d/b.txt"))
	if string(data) != "beta" {
		t.Errorf("old snapshot's bytes changed: %q", data)
	}
	if got := lines(mustRead(t, w.SnapshotChanges(r2.ID))); len(got) != 1 || got[0] != ">f.st...... store/d/b.txt" {
		t.Errorf("change list = %q", got)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestUnchangedStoreTakesNone(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	write(t, filepath.Join(w.Store(), "a"), "a", 0o644)
	o := opts(10)
	r1 := take(t, w, o)
	r2 := take(t, w, o)
	if !r2.Unchanged || r2.ID != "" || r2.Prev != r1.ID {
		t.Fatalf("unchanged take: %+v", r2)
	}
	ids, _ := IDs(w)
	if len(ids) != 1 {
		t.Fatalf("snapshots = %v", ids)
	}
}

func TestSnapshotsZeroTakesNone(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	write(t, filepath.Join(w.Store(), "a"), "a", 0o644)
	r := take(t, w, opts(0))
	if !r.Disabled || r.ID != "" {
		t.Fatalf("store.snapshots = 0: %+v", r)
	}
	if ids, _ := IDs(w); len(ids) != 0 {
		t.Fatalf("snapshots = %v", ids)
	}
}

// The older snapshot keeps its bytes, mode and owner whatever happens to
// the store afterwards, and metadata-only changes get a new inode (no
// shared inode is ever chmodded or chowned).
func TestOlderSnapshotUnchangedByStoreChanges(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	s := w.Store()
	for _, n := range []string{"edit", "chmod", "chown", "delete", "rename", "same"} {
		write(t, filepath.Join(s, n), "content of "+n, 0o640)
	}
	os.Chown(filepath.Join(s, "chown"), 1000, 1000)
	o := opts(10)
	r1 := take(t, w, o)
	old := filepath.Join(w.Snapshot(r1.ID), "store")
	before := treeState(t, old)

	write(t, filepath.Join(s, "edit"), "edited", 0o640)
	os.Chmod(filepath.Join(s, "chmod"), 0o600)
	os.Chown(filepath.Join(s, "chown"), 2000, 3000)
	os.Remove(filepath.Join(s, "delete"))
	os.Rename(filepath.Join(s, "rename"), filepath.Join(s, "renamed"))
	r2 := take(t, w, o)
	if r2.ID == "" {
		t.Fatal("no snapshot after changes")
	}
	if after := treeState(t, old); after != before {
		t.Fatalf("older snapshot changed:\n%s\nwas\n%s", after, before)
	}
	newer := filepath.Join(w.Snapshot(r2.ID), "store")
	if got, want := treeState(t, newer), treeState(t, s); got != want {
		t.Fatalf("new snapshot differs from store:\n%s\nwant\n%s", got, want)
	}
	for _, n := range []string{"chmod", "chown", "edit"} {
		if inode(t, filepath.Join(old, n)) == inode(t, filepath.Join(newer, n)) {
			t.Errorf("%s: changed file shares the older snapshot's inode", n)
		}
	}
	if inode(t, filepath.Join(old, "same")) != inode(t, filepath.Join(newer, "same")) {
		t.Error("unchanged file not shared")
	}
	want := []string{
		"*deleting   store/rename",
		"*deleting   store/delete",
		".d..t...... store/",
		".f....og... store/chown",
		".f...p..... store/chmod",
		">f.st...... store/edit",
		">f+++++++++ store/renamed",
	}
	got := lines(mustRead(t, w.SnapshotChanges(r2.ID)))
	if strings.Join(sorted(got), "\n") != strings.Join(sorted(want), "\n") {
		t.Errorf("change list:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// An in-place write after a snapshot (same size, mtime put back) never
// reaches the snapshot, and the next take notices it by inode ctime.
func TestInPlaceEditNeverChangesSnapshot(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	p := filepath.Join(w.Store(), "f")
	write(t, p, "AAAA", 0o644)
	fi, _ := os.Stat(p)
	o := opts(10)
	r1 := take(t, w, o)
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("BBBB"), 0)
	f.Close()
	os.Chtimes(p, fi.ModTime(), fi.ModTime())
	if got := string(mustRead(t, filepath.Join(w.Snapshot(r1.ID), "store/f"))); got != "AAAA" {
		t.Fatalf("in-place edit reached the snapshot: %q", got)
	}
	r2 := take(t, w, o)
	if r2.ID == "" {
		t.Fatal("same-size same-mtime edit not noticed")
	}
	if got := string(mustRead(t, filepath.Join(w.Snapshot(r2.ID), "store/f"))); got != "BBBB" {
		t.Fatalf("new snapshot has %q", got)
	}
	if got := lines(mustRead(t, w.SnapshotChanges(r2.ID))); len(got) != 1 || got[0] != ">f......... store/f" {
		t.Errorf("change list = %q", got)
	}
}

// Symlinks out of the store are copied as symlinks with the same target
// text; nothing behind them is read or written.
func TestSymlinksStaySymlinksNothingOutsideTouched(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	sentinel := t.TempDir()
	secret := filepath.Join(sentinel, "secret")
	write(t, secret, "do not read", 0o644)
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	os.Chtimes(secret, old, time.Date(2002, 1, 1, 0, 0, 0, 0, time.UTC)) // atime < mtime: any read updates it
	os.Chtimes(sentinel, old, time.Date(2002, 1, 1, 0, 0, 0, 0, time.UTC))
	sentBefore := sentinelState(t, sentinel)

	s := w.Store()
	links := map[string]string{
		"passwd": "/etc/passwd", "up": "../../..", "sent": sentinel, "sentf": secret,
		"d/deep": "../../../../..", "loop": "loop", "a": "b", "b": "a",
	}
	os.MkdirAll(filepath.Join(s, "d"), 0o755)
	for n, target := range links {
		if err := os.Symlink(target, filepath.Join(s, n)); err != nil {
			t.Fatal(err)
		}
	}
	o := opts(10)
	r1 := take(t, w, o)
	snapStore := filepath.Join(w.Snapshot(r1.ID), "store")
	for n, target := range links {
		got, err := os.Readlink(filepath.Join(snapStore, n))
		if err != nil || got != target {
			t.Errorf("snapshot %s: readlink = %q, %v; want %q", n, got, err, target)
		}
	}
	if got := sentinelState(t, sentinel); got != sentBefore {
		t.Fatalf("outside the store touched by take:\n%s\nwas\n%s", got, sentBefore)
	}
	// Restore them after the store lost them.
	for n := range links {
		os.Remove(filepath.Join(s, n))
	}
	if _, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: r1.ID}); err != nil {
		t.Fatal(err)
	}
	for n, target := range links {
		fi, err := os.Lstat(filepath.Join(s, n))
		if err != nil || fi.Mode().Type() != os.ModeSymlink {
			t.Fatalf("restored %s is not a symlink: %v", n, err)
		}
		if got, _ := os.Readlink(filepath.Join(s, n)); got != target {
			t.Errorf("restored %s -> %q, want %q", n, got, target)
		}
	}
	if got := sentinelState(t, sentinel); got != sentBefore {
		t.Fatalf("outside the store touched by restore:\n%s\nwas\n%s", got, sentBefore)
	}
	if ents, _ := os.ReadDir(sentinel); len(ents) != 1 {
		t.Fatalf("sentinel folder holds %v", ents)
	}
	if data := mustRead(t, "/etc/passwd"); len(data) == 0 {
		t.Fatal("/etc/passwd emptied")
	}
}

// sentinelState is the sentinel folder's and its file's inode, size,
// atime, mtime and ctime, by lstat only (listing the folder would update
// its atime).
func sentinelState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	for _, p := range []string{dir, filepath.Join(dir, "secret")} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		b.WriteString(p + " " + fi.Mode().String() + " " + itoa(int64(st.Ino)) + " " + itoa(st.Size) + " " +
			itoa(st.Atim.Nano()) + " " + itoa(st.Mtim.Nano()) + " " + itoa(st.Ctim.Nano()) + "\n")
	}
	return b.String()
}

func itoa(n int64) string { return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(n)) }

func fmtInt(n int64) string { return string(appendInt(nil, n)) }

func appendInt(b []byte, n int64) []byte {
	if n < 0 {
		b = append(b, '-')
		n = -n
	}
	var d [20]byte
	i := len(d)
	for {
		i--
		d[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return append(b, d[i:]...)
}

// A FIFO (and a socket, a device) is never opened: skipped and listed.
func TestSpecialFilesSkippedListedNeverOpened(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	s := w.Store()
	write(t, filepath.Join(s, "plain"), "x", 0o644)
	if err := unix.Mkfifo(filepath.Join(s, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(s, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := unix.Mknod(filepath.Join(s, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatal(err)
	}
	r := take(t, w, opts(10))
	got := lines(mustRead(t, w.SnapshotChanges(r.ID)))
	for _, want := range []string{"skipped store/pipe (fifo)", "skipped store/sock (socket)", "skipped store/null (device)", ">f+++++++++ store/plain"} {
		if !contains(got, want) {
			t.Errorf("change list lacks %q:\n%s", want, strings.Join(got, "\n"))
		}
	}
	for _, n := range []string{"pipe", "sock", "null"} {
		if _, err := os.Lstat(filepath.Join(w.Snapshot(r.ID), "store", n)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is in the snapshot", n)
		}
	}
	if r2 := take(t, w, opts(10)); !r2.Unchanged {
		t.Errorf("specials alone made a new snapshot: %+v", r2)
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

func sorted(s []string) []string {
	c := append([]string(nil), s...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return c
}

// Hardlinks inside the store stay one inode in the snapshot and after a
// restore.
func TestHardlinksKeptInSnapshotAndRestore(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	s := w.Store()
	write(t, filepath.Join(s, "one"), "shared bytes", 0o644)
	os.MkdirAll(filepath.Join(s, "sub"), 0o755)
	if err := os.Link(filepath.Join(s, "one"), filepath.Join(s, "sub/two")); err != nil {
		t.Fatal(err)
	}
	o := opts(10)
	r := take(t, w, o)
	snap := filepath.Join(w.Snapshot(r.ID), "store")
	if inode(t, filepath.Join(snap, "one")) != inode(t, filepath.Join(snap, "sub/two")) {
		t.Fatal("hardlinked store files are two inodes in the snapshot")
	}
	write(t, filepath.Join(s, "other"), "x", 0o644)
	r2 := take(t, w, o)
	snap2 := filepath.Join(w.Snapshot(r2.ID), "store")
	if inode(t, filepath.Join(snap2, "one")) != inode(t, filepath.Join(snap2, "sub/two")) ||
		inode(t, filepath.Join(snap2, "one")) != inode(t, filepath.Join(snap, "one")) {
		t.Fatal("hardlink group not carried into the next snapshot")
	}
	if _, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: r.ID}); err != nil {
		t.Fatal(err)
	}
	if inode(t, filepath.Join(s, "one")) != inode(t, filepath.Join(s, "sub/two")) {
		t.Fatal("restore split a hardlink group")
	}
	if inode(t, filepath.Join(s, "one")) == inode(t, filepath.Join(snap, "one")) {
		t.Fatal("restore hardlinked the snapshot's file into the store")
	}
}

func TestRotationKeepsExactlyN(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	o := opts(3)
	var made []string
	for i := 0; i < 6; i++ {
		write(t, filepath.Join(w.Store(), "f"), strings.Repeat("x", i+1), 0o644)
		made = append(made, take(t, w, o).ID)
	}
	ids, _ := IDs(w)
	if strings.Join(ids, " ") != strings.Join(made[3:], " ") {
		t.Fatalf("kept %v, want the newest 3 of %v", ids, made)
	}
	if ents, _ := os.ReadDir(filepath.Join(w.Snapshots(), ".trash")); len(ents) != 0 {
		t.Errorf(".trash not emptied: %v", ents)
	}
	// The kept ones are still whole.
	if got := string(mustRead(t, filepath.Join(w.Snapshot(made[5]), "store/f"))); got != "xxxxxx" {
		t.Errorf("newest snapshot has %q", got)
	}
	pruned, err := Prune(context.Background(), w, 0, o)
	if err != nil || len(pruned) != 2 {
		t.Fatalf("prune --keep 0: %v %v", pruned, err)
	}
	if ids, _ := IDs(w); len(ids) != 1 || ids[0] != made[5] {
		t.Fatalf("prune --keep 0 kept %v; the newest must stay", ids)
	}
}

// A file the take cannot read (injected EACCES: root reads mode-000
// files) is listed skipped with its reason and left out; the take
// succeeds for the rest, and the next take, once it reads, copies it.
func TestUnreadableFileSkipped(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	write(t, filepath.Join(w.Store(), "good"), "good", 0o644)
	o := opts(10)
	r1 := take(t, w, o)
	before := treeState(t, w.Snapshot(r1.ID))
	write(t, filepath.Join(w.Store(), "bad"), "bad", 0o000)
	write(t, filepath.Join(w.Store(), "new"), "new", 0o644)
	copyFault = func(p string) error {
		if p == "store/bad" {
			return unix.EACCES
		}
		return nil
	}
	defer func() { copyFault = nil }()
	r2, err := Take(context.Background(), w, o)
	copyFault = nil
	if err != nil || r2.ID == "" {
		t.Fatalf("take = %v, %+v", err, r2)
	}
	got := lines(mustRead(t, w.SnapshotChanges(r2.ID)))
	if !contains(got, "skipped store/bad (cannot be read: permission denied)") || !contains(got, ">f+++++++++ store/new") {
		t.Fatalf("change list:\n%s", strings.Join(got, "\n"))
	}
	if _, err := os.Lstat(filepath.Join(w.Snapshot(r2.ID), "store/bad")); !os.IsNotExist(err) {
		t.Fatalf("snapshot holds the unreadable file: %v", err)
	}
	if got := treeState(t, w.Snapshot(r1.ID)); got != before {
		t.Fatal("older snapshot changed")
	}
	assertNoPartial(t, w.Snapshots())
	r3 := take(t, w, o)
	if got := lines(mustRead(t, w.SnapshotChanges(r3.ID))); !contains(got, ">f+++++++++ store/bad") {
		t.Fatalf("readable again, change list:\n%s", strings.Join(got, "\n"))
	}
}

// A write lease on a store file (F_SETLEASE F_WRLCK, held by another
// process as a box's would be) makes the take's non-blocking open fail
// with EWOULDBLOCK: the file is skipped ("a lease is held on it") and the
// take succeeds at once instead of failing (issue 17) or waiting for the
// lease to break. Released, the next take copies it.
func TestLeasedFileSkipped(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	write(t, filepath.Join(w.Store(), "good"), "good", 0o644)
	write(t, filepath.Join(w.Store(), "leased"), "leased", 0o644)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SNAP_CHILD=lease", "SNAP_FILE="+filepath.Join(w.Store(), "leased"))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	ready := make([]byte, 3)
	if _, err := io.ReadFull(stdout, ready); err != nil || string(ready) != "ok\n" {
		t.Fatalf("lease holder: %q, %v", ready, err)
	}
	o := opts(10)
	r, err := Take(context.Background(), w, o)
	if err != nil || r.ID == "" {
		t.Fatalf("take under a lease = %v, %+v", err, r)
	}
	got := lines(mustRead(t, w.SnapshotChanges(r.ID)))
	if !contains(got, "skipped store/leased (a lease is held on it)") || !contains(got, ">f+++++++++ store/good") {
		t.Fatalf("change list:\n%s", strings.Join(got, "\n"))
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("lease holder: %v", err)
	}
	r2 := take(t, w, o)
	if got := lines(mustRead(t, w.SnapshotChanges(r2.ID))); !contains(got, ">f+++++++++ store/leased") {
		t.Fatalf("lease released, change list:\n%s", strings.Join(got, "\n"))
	}
}

func assertNoPartial(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".partial-") {
			t.Errorf("partial snapshot left: %s", e.Name())
		}
	}
}

// A full disk fails the take cleanly; older snapshots stay whole.
func TestFullDiskFailsCleanly(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=2m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	w := newWorker(t, dir)
	big := strings.Repeat("a", 700<<10)
	write(t, filepath.Join(w.Store(), "big"), big, 0o644)
	o := opts(10)
	r1 := take(t, w, o)
	before := treeState(t, w.Snapshot(r1.ID))
	write(t, filepath.Join(w.Store(), "big"), strings.Repeat("b", 700<<10), 0o644)
	_, err := Take(context.Background(), w, o)
	if !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("take on a full disk = %v, want ENOSPC", err)
	}
	if ids, _ := IDs(w); len(ids) != 1 {
		t.Fatalf("snapshots = %v", ids)
	}
	if got := treeState(t, w.Snapshot(r1.ID)); got != before {
		t.Fatal("older snapshot changed")
	}
	assertNoPartial(t, w.Snapshots())
}

func TestStoreBusyAfterWait(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	write(t, filepath.Join(w.Store(), "a"), "a", 0o644)
	f, err := os.Open(w.StoreLock())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := fsx.Flock(context.Background(), f, true, 0); err != nil { // a box's shared hold
		t.Fatal(err)
	}
	o := opts(10)
	o.Wait = 50 * time.Millisecond
	_, err = Take(context.Background(), w, o)
	if !errors.Is(err, errs.ErrBusy) || !strings.Contains(err.Error(), "store busy") {
		t.Fatalf("take under a held lock = %v, want store busy", err)
	}
	_, err = Restore(context.Background(), w, RestoreOptions{Options: o})
	if !errors.Is(err, errs.ErrBusy) {
		t.Fatalf("restore under a held lock = %v, want busy", err)
	}
}

// A file that changes on every copy is copied maxTries times, then kept
// and marked unstable; the next take copies it again.
func TestFileChangingDuringCopyMarkedUnstable(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	p := filepath.Join(w.Store(), "busy.log")
	write(t, p, "start", 0o644)
	tries := 0
	copyDuring = func(rel string) {
		if rel == "store/busy.log" {
			tries++
			f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			f.Write([]byte("more"))
			f.Close()
		}
	}
	r := take(t, w, opts(10))
	copyDuring = nil
	if tries != maxTries {
		t.Errorf("copied %d times, want %d", tries, maxTries)
	}
	got := lines(mustRead(t, w.SnapshotChanges(r.ID)))
	if !contains(got, "unstable store/busy.log") {
		t.Errorf("change list lacks the unstable line:\n%s", strings.Join(got, "\n"))
	}
	m := readManifest(t, w.SnapshotManifest(r.ID))
	if m.Header.Unstable != 1 {
		t.Errorf("header unstable = %d", m.Header.Unstable)
	}
	r2 := take(t, w, opts(10))
	if r2.ID == "" {
		t.Fatal("an unstable file was not copied again")
	}
	if got := string(mustRead(t, filepath.Join(w.Snapshot(r2.ID), "store/busy.log"))); got != "start"+strings.Repeat("more", maxTries) {
		t.Errorf("recopied file = %q", got)
	}
}

func readManifest(t *testing.T, p string) *Manifest {
	t.Helper()
	m, err := ParseManifest(mustRead(t, p))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The store's .locks mount point is never snapshotted, and a folder with
// that name deeper down is.
func TestLocksMountPointSkippedOnlyAtTop(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	write(t, filepath.Join(w.StoreLocksMount(), "junk"), "x", 0o644)
	write(t, filepath.Join(w.Store(), "sub/.locks/keep"), "y", 0o644)
	r := take(t, w, opts(10))
	if _, err := os.Lstat(filepath.Join(w.Snapshot(r.ID), "store/.locks")); !errors.Is(err, os.ErrNotExist) {
		t.Error(".locks mount point snapshotted")
	}
	if string(mustRead(t, filepath.Join(w.Snapshot(r.ID), "store/sub/.locks/keep"))) != "y" {
		t.Error("a deeper .locks folder was skipped")
	}
}

func TestChannelStoresSnapshotAndRestoreAlone(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	cs, _ := w.ChannelStore("slack:C01/th 1")
	write(t, filepath.Join(cs, "note"), "one", 0o644)
	write(t, filepath.Join(w.Store(), "s"), "store one", 0o644)
	o := opts(10)
	r1 := take(t, w, o)
	if string(mustRead(t, filepath.Join(w.Snapshot(r1.ID), "channel-stores", filepath.Base(cs), "note"))) != "one" {
		t.Fatal("channel store not in the snapshot")
	}
	write(t, filepath.Join(cs, "note"), "two", 0o644)
	write(t, filepath.Join(w.Store(), "s"), "store two", 0o644)
	take(t, w, o)
	if _, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: r1.ID, Channel: "slack:C01/th 1"}); err != nil {
		t.Fatal(err)
	}
	if got := string(mustRead(t, filepath.Join(cs, "note"))); got != "one" {
		t.Errorf("channel store = %q after --channel restore", got)
	}
	if got := string(mustRead(t, filepath.Join(w.Store(), "s"))); got != "store two" {
		t.Errorf("--channel restore touched the store: %q", got)
	}
	_, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: r1.ID, Channel: "nope"})
	if !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("restore of a channel the snapshot lacks = %v", err)
	}
}
