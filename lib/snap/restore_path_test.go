package snap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
)

func restorePath(w home.Worker, o Options, from, path string) (*RestoreResult, error) {
	return Restore(context.Background(), w, RestoreOptions{Options: o, From: from, Path: path})
}

func mtimeOf(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime().UnixNano()
}

func restoreChanges(t *testing.T, w home.Worker, pre string) string {
	t.Helper()
	return string(mustRead(t, filepath.Join(w.Snapshot(pre), home.SnapRestoreChanges)))
}

// restore --path puts back one file, or one folder whole, as the snapshot
// holds it, and nothing else: the rest of the store and the folder it
// lands in are as they were; it takes an undoable pre-restore snapshot
// and keeps its change list there; the next take lists none of it.
func TestRestorePathRestoresOnlyThatPath(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	s := w.Store()
	fillStore(t, s, "A")
	o := opts(10)
	a := take(t, w, o)
	stateObjects := treeState(t, filepath.Join(s, "repo/objects"))
	stateHEAD := treeState(t, filepath.Join(s, "repo/HEAD"))
	// Move on: HEAD rewritten, objects gone, a new file elsewhere.
	write(t, filepath.Join(s, "repo/HEAD"), "ref: other, longer", 0o600)
	os.RemoveAll(filepath.Join(s, "repo/objects"))
	write(t, filepath.Join(s, "fresh/file"), "B only", 0o600)
	write(t, filepath.Join(s, "notes.md"), "notes B", 0o644)
	take(t, w, o)
	when := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	os.Chtimes(filepath.Join(s, "repo"), when, when)
	repoTime := mtimeOf(t, filepath.Join(s, "repo"))
	before := treeState(t, s)
	headB := treeState(t, filepath.Join(s, "repo/HEAD"))

	dry, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID, Path: "repo/HEAD", DryRun: true})
	if err != nil || len(dry.Changes) != 1 || dry.Changes[0].Line() != ">f.stp..... store/repo/HEAD" || dry.Put {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	if treeState(t, s) != before {
		t.Fatal("dry run changed the store")
	}
	r, err := restorePath(w, o, a.ID, "repo/HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if got := treeState(t, filepath.Join(s, "repo/HEAD")); got != stateHEAD {
		t.Fatalf("restored HEAD: %s, want %s", got, stateHEAD)
	}
	if mtimeOf(t, filepath.Join(s, "repo")) != repoTime {
		t.Fatal("the restored file's folder lost its mtime")
	}
	if got := string(mustRead(t, filepath.Join(s, "notes.md"))); got != "notes B" {
		t.Fatalf("restore --path touched another file: %q", got)
	}
	if h := readManifest(t, w.SnapshotManifest(r.PreRestore)).Header; h.Label != LabelPreRestore {
		t.Fatalf("pre-restore snapshot labelled %q", h.Label)
	}
	if got := restoreChanges(t, w, r.PreRestore); got != ">f.stp..... store/repo/HEAD\n" {
		t.Fatalf("restore's change list:\n%s", got)
	}
	// The next take lists what changed outside the path since, and
	// nothing of the restore: its changes are its own.
	write(t, filepath.Join(s, "fresh/file"), "B again, longer", 0o600)
	if n := take(t, w, o); n.ID == "" || string(mustRead(t, w.SnapshotChanges(n.ID))) != ">f.st...... store/fresh/file\n" {
		t.Fatalf("the take after restore --path lists:\n%s", mustRead(t, w.SnapshotChanges(n.ID)))
	}

	// A folder gone from the live store is put back whole.
	r2, err := restorePath(w, o, a.ID, "repo/objects/")
	if err != nil {
		t.Fatal(err)
	}
	if !r2.Put {
		t.Fatal("a gone folder put back is not reported as put back")
	}
	if got := treeState(t, filepath.Join(s, "repo/objects")); got != stateObjects {
		t.Fatalf("restored folder:\n%s\nwant\n%s", got, stateObjects)
	}
	if mtimeOf(t, filepath.Join(s, "repo")) != repoTime {
		t.Fatal("the restored folder's parent lost its mtime")
	}
	if got := restoreChanges(t, w, r2.PreRestore); !strings.HasPrefix(got, "cd+++++++++ store/repo/objects/\n") || strings.Contains(got, "HEAD") {
		t.Fatalf("restore's change list:\n%s", got)
	}
	// The store now differs from the newest snapshot (the pre-restore
	// one): the next take records it, listing nothing.
	n := take(t, w, o)
	if n.ID == "" || string(mustRead(t, w.SnapshotChanges(n.ID))) != "" {
		t.Fatalf("the take after a put-back: %+v", n)
	}
	if got := treeState(t, filepath.Join(w.Snapshot(n.ID), "store/repo/objects")); got != stateObjects {
		t.Fatal("the take after a put-back does not hold it")
	}

	// Undo the first: --path from its pre-restore snapshot.
	if _, err := restorePath(w, o, r.PreRestore, "repo/HEAD"); err != nil {
		t.Fatal(err)
	}
	if got := treeState(t, filepath.Join(s, "repo/HEAD")); got != headB {
		t.Fatalf("undone HEAD: %s, want %s", got, headB)
	}
	ents, _ := os.ReadDir(w.Dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), home.RestorePrefix) {
			t.Errorf("staging left: %s", e.Name())
		}
	}
}

// Folders above the path that are gone from the live store are made on
// the way, holding only the path, in one rename; a symlink is restored
// as the link; a folder replaces a file and a file a folder.
func TestRestorePathThroughGoneFoldersAndAcrossTypes(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	s := w.Store()
	fillStore(t, s, "A")
	o := opts(10)
	a := take(t, w, o)
	blob := treeState(t, filepath.Join(s, "repo/objects/ab/cdef"))
	os.RemoveAll(filepath.Join(s, "repo"))
	os.Remove(filepath.Join(s, "etc"))
	os.Symlink("/etc/hostname", filepath.Join(s, "etc"))
	os.RemoveAll(filepath.Join(s, "empty"))
	write(t, filepath.Join(s, "empty"), "a file now", 0o644)
	os.Remove(filepath.Join(s, "secret"))
	os.MkdirAll(filepath.Join(s, "secret/sub"), 0o755)
	take(t, w, o)

	r, err := restorePath(w, o, a.ID, "repo/objects/ab/cdef")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Put {
		t.Fatal("not reported as put back")
	}
	if got := treeState(t, filepath.Join(s, "repo/objects/ab/cdef")); got != blob {
		t.Fatalf("restored file %s, want %s", got, blob)
	}
	ents, _ := os.ReadDir(filepath.Join(s, "repo"))
	if len(ents) != 1 || ents[0].Name() != "objects" {
		t.Fatalf("the gone folder holds more than the path: %v", ents)
	}
	if ownerOf(t, filepath.Join(s, "repo")) != "200001:200001" {
		t.Fatalf("the folder made on the way lacks the snapshot's owner: %s", ownerOf(t, filepath.Join(s, "repo")))
	}
	if n := take(t, w, o); n.ID == "" || string(mustRead(t, w.SnapshotChanges(n.ID))) != "" {
		t.Fatalf("the take after the restore lists:\n%s", mustRead(t, w.SnapshotChanges(n.ID)))
	}

	if _, err := restorePath(w, o, a.ID, "etc"); err != nil {
		t.Fatal(err)
	}
	if target, _ := os.Readlink(filepath.Join(s, "etc")); target != "/etc/passwd" {
		t.Fatalf("restored symlink points at %q", target)
	}
	if _, err := restorePath(w, o, a.ID, "empty"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(s, "empty")); err != nil || !fi.IsDir() {
		t.Fatal("a folder did not replace the file")
	}
	r3, err := restorePath(w, o, a.ID, "secret")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(mustRead(t, filepath.Join(s, "secret"))); got != "s3cr3t" {
		t.Fatalf("a file did not replace the folder: %q", got)
	}
	if got := restoreChanges(t, w, r3.PreRestore); !strings.Contains(got, "*deleting   store/secret/sub/\n") || !strings.Contains(got, ">f+++++++++ store/secret\n") {
		t.Fatalf("restore's change list:\n%s", got)
	}
	if n := take(t, w, o); n.ID != "" && string(mustRead(t, w.SnapshotChanges(n.ID))) != "" {
		t.Fatalf("the take after the restores lists:\n%s", mustRead(t, w.SnapshotChanges(n.ID)))
	}
}

func ownerOf(t *testing.T, p string) string {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return fmt.Sprintf("%d:%d", st.Uid, st.Gid)
}

// restore --path refuses, changing nothing: a path that leaves the store
// or names the lock mount point (usage, exit 2), one the snapshot lacks
// (exit 12), one below a live symlink or file (exit 13: never followed),
// and any while a box of the worker is live (exit 13).
func TestRestorePathRefusals(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	w := newWorker(t, dir)
	s := w.Store()
	write(t, filepath.Join(s, "d/f"), "one", 0o644)
	write(t, filepath.Join(s, "g"), "one", 0o644)
	o := opts(10)
	a := take(t, w, o)
	for _, p := range []string{"/etc/passwd", "../x", "d/../../x", "d/./f", "d//f", ".", ".locks", ".locks/store", ""} {
		_, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID, Path: p})
		if p == "" {
			continue // "" is a whole restore in the library; the command refuses it
		}
		if !errors.Is(err, errs.ErrUsage) {
			t.Errorf("--path %q: %v, want a usage error", p, err)
		}
	}
	if _, err := restorePath(w, o, a.ID, "nope"); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("a path the snapshot lacks: %v", err)
	}
	// The live d is a link to a folder outside the store: the restore
	// never writes through it.
	outside := filepath.Join(dir, "outside")
	write(t, filepath.Join(outside, "f"), "outside", 0o644)
	os.RemoveAll(filepath.Join(s, "d"))
	os.Symlink(outside, filepath.Join(s, "d"))
	write(t, filepath.Join(s, "g"), "two", 0o644)
	before := treeState(t, s)
	ids, _ := IDs(w)
	if _, err := restorePath(w, o, a.ID, "d/f"); !errors.Is(err, errs.ErrConflict) || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("below a live symlink: %v", err)
	}
	if got := string(mustRead(t, filepath.Join(outside, "f"))); got != "outside" {
		t.Fatalf("the restore wrote through a live symlink: %q", got)
	}
	if treeState(t, s) != before {
		t.Fatal("a refused restore --path changed the store")
	}
	os.Remove(filepath.Join(s, "d"))
	write(t, filepath.Join(s, "d"), "a file", 0o644)
	before = treeState(t, s)
	if _, err := restorePath(w, o, a.ID, "d/f"); !errors.Is(err, errs.ErrConflict) {
		t.Fatalf("below a live file: %v", err)
	}
	if treeState(t, s) != before {
		t.Fatal("a refused restore --path changed the store")
	}
	os.Remove(filepath.Join(s, "d"))
	os.Symlink(outside, filepath.Join(s, "d"))
	before = treeState(t, s)
	run := home.NewRunID(time.Now())
	os.MkdirAll(w.Run(run), 0o755)
	b, err := runs.SelfBoxInfo(w.Name, run, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := runs.WriteBoxInfo(w.Run(run), b); err != nil {
		t.Fatal(err)
	}
	if _, err := restorePath(w, o, a.ID, "g"); !errors.Is(err, errs.ErrConflict) {
		t.Fatalf("under a live box: %v", err)
	}
	os.Remove(home.BoxJSON(w.Run(run)))
	if treeState(t, s) != before {
		t.Fatal("a refused restore --path changed the store")
	}
	if after, _ := IDs(w); len(after) != len(ids) {
		t.Fatal("a refused restore --path took a snapshot")
	}
	// The link itself can be restored: it is replaced, never followed.
	if _, err := restorePath(w, o, a.ID, "d"); err != nil {
		t.Fatal(err)
	}
	if got := string(mustRead(t, filepath.Join(s, "d/f"))); got != "one" {
		t.Fatalf("restored folder: %q", got)
	}
	if got := string(mustRead(t, filepath.Join(outside, "f"))); got != "outside" {
		t.Fatalf("restoring over a link wrote through it: %q", got)
	}
}

// A whole restore keeps its change list with its pre-restore snapshot:
// the list its dry run printed; the take after it lists none of it.
func TestRestoreKeepsItsChangeList(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	s := w.Store()
	fillStore(t, s, "A")
	o := opts(10)
	a := take(t, w, o)
	write(t, filepath.Join(s, "notes.md"), "notes B, longer", 0o640)
	os.RemoveAll(filepath.Join(s, "repo/objects"))
	write(t, filepath.Join(s, "fresh/file"), "B only", 0o600)
	take(t, w, o)
	dry, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID})
	if err != nil {
		t.Fatal(err)
	}
	want := string(ChangeList(dry.Changes))
	if got := restoreChanges(t, w, r.PreRestore); got != want || want == "" {
		t.Fatalf("restore's change list:\n%s\nwant\n%s", got, want)
	}
	_, data, err := ChangeFile(context.Background(), w, r.PreRestore, true)
	if err != nil || string(data) != want {
		t.Fatalf("ChangeFile: %q %v", data, err)
	}
	if _, _, err := ChangeFile(context.Background(), w, a.ID, true); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("ChangeFile --restore of an ordinary snapshot: %v", err)
	}
	n := take(t, w, o)
	if n.ID != "" && string(mustRead(t, w.SnapshotChanges(n.ID))) != "" {
		t.Fatalf("the take after the restore lists:\n%s", mustRead(t, w.SnapshotChanges(n.ID)))
	}
}

// FuzzCleanRestorePath: an accepted --path, joined below a folder, stays
// below it; it has no empty, "." or ".." component, no NUL, no leading or
// trailing slash, never names the .locks mount point in the store; and
// anything refused is a usage error.
func FuzzCleanRestorePath(f *testing.F) {
	for _, s := range []string{"notes/a.md", "notes/", "a//b", "../x", "a/../b", "/etc", ".", "./a", ".locks", ".locks/x", ".locksmith", "a/.", "\x00", "d/\xff\xfe", "a\nb/"} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, p string, inStore bool) {
		got, err := CleanRestorePath(p, inStore)
		if err != nil {
			if !errors.Is(err, errs.ErrUsage) {
				t.Fatalf("%q: %v is not a usage error", p, err)
			}
			return
		}
		if got == "" || strings.HasPrefix(got, "/") || strings.HasSuffix(got, "/") || strings.IndexByte(got, 0) >= 0 {
			t.Fatalf("%q -> %q", p, got)
		}
		for _, c := range strings.Split(got, "/") {
			if c == "" || c == "." || c == ".." {
				t.Fatalf("%q -> %q has component %q", p, got, c)
			}
		}
		if inStore && (got == home.StoreLocksName || strings.HasPrefix(got, home.StoreLocksName+"/")) {
			t.Fatalf("%q -> %q names the lock mount point", p, got)
		}
		if rel, err := filepath.Rel("/base", filepath.Join("/base", got)); err != nil || rel != got {
			t.Fatalf("%q -> %q leaves its folder (%q)", p, got, rel)
		}
		if again, err := CleanRestorePath(got, inStore); err != nil || again != got {
			t.Fatalf("%q -> %q -> %q %v: not stable", p, got, again, err)
		}
	})
}

// forget scrubs a channel's lines from a restore's kept change list too,
// and drops a restore record whose scope names the channel.
func TestForgetScrubsARestoresChangeList(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	ch := filepath.Join(w.ChannelStores(), "chat")
	write(t, filepath.Join(ch, "said.txt"), "hello", 0o644)
	write(t, filepath.Join(w.Store(), "f"), "one", 0o644)
	o := opts(10)
	a := take(t, w, o)
	write(t, filepath.Join(ch, "said.txt"), "hello again", 0o644)
	write(t, filepath.Join(w.Store(), "f"), "two", 0o644)
	r, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got := restoreChanges(t, w, r.PreRestore); !strings.Contains(got, "channel-stores/chat/said.txt") || !strings.Contains(got, "store/f") {
		t.Fatalf("restore's change list:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(w.Snapshots(), recordName)); err != nil {
		t.Fatalf("no restore record after the restore: %v", err)
	}
	if _, err := ForgetChannel(context.Background(), w, "chat", false, o); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(w.Snapshots(), recordName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a restore record naming the channel outlived its forget: %v", err)
	}
	if got := restoreChanges(t, w, r.PreRestore); strings.Contains(got, "chat") || got != ">f..t...... store/f\n" {
		t.Fatalf("after forget, the restore's change list:\n%s", got)
	}
}

// --force under a live box: the path is restored (the box sees it at
// once) and the old one waits in .trash/ until no box is live.
func TestRestorePathForcedUnderALiveBox(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	write(t, filepath.Join(w.Store(), "d/f"), "one", 0o644)
	o := opts(10)
	a := take(t, w, o)
	write(t, filepath.Join(w.Store(), "d/f"), "two", 0o644)
	run := home.NewRunID(time.Now())
	os.MkdirAll(w.Run(run), 0o755)
	b, err := runs.SelfBoxInfo(w.Name, run, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := runs.WriteBoxInfo(w.Run(run), b); err != nil {
		t.Fatal(err)
	}
	r, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID, Path: "d", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(mustRead(t, filepath.Join(w.Store(), "d/f"))); got != "one" || len(r.Trashed) != 1 {
		t.Fatalf("forced restore --path: %q %+v", got, r)
	}
	old := filepath.Join(w.Snapshots(), ".trash", r.Trashed[0])
	if got := string(mustRead(t, filepath.Join(old, "f"))); got != "two" {
		t.Fatalf("old path in .trash/: %q", got)
	}
	os.Remove(home.BoxJSON(w.Run(run)))
	take(t, w, o)
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("old path not deleted once no box is live")
	}
}
