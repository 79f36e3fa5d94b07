package snap

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// snapInodes maps each regular file of a snapshot's store to its inode.
func snapInodes(t *testing.T, w interface{ Snapshot(string) string }, id string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	root := filepath.Join(w.Snapshot(id), "store")
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			rel, _ := filepath.Rel(root, p)
			out[rel] = inode(t, p)
		}
		return nil
	})
	return out
}

// After a restore every file has a new ctime (and most a new inode), yet
// the next take copies none of the files the restore put back from a
// snapshot: it links the snapshot copies those files provably hold (the
// restore record), and lists none of what the restore changed.
//
// Both ways of knowing a snapshot file's inode are run: the folder's
// getdents (where the filesystem is trusted for it) and an fstatat each.
func TestTakeAfterRestoreLinksInsteadOfCopying(t *testing.T) {
	needRoot(t)
	bothInodeSources(t, testTakeAfterRestoreLinksInsteadOfCopying)
}

// bothInodeSources runs f as is and with the getdents inodes (staging's,
// and those of the restore record's checks in a take) off, as on a
// filesystem inoTrusted does not name.
func bothInodeSources(t *testing.T, f func(t *testing.T)) {
	t.Run("getdents", func(t *testing.T) {
		if !trustDirInodes(mustOpenDir(t, t.TempDir())) {
			t.Skip("the test folder's filesystem is not one whose getdents inodes are trusted")
		}
		f(t)
	})
	t.Run("fstatat", func(t *testing.T) {
		old := trustDirInodes
		trustDirInodes = func(int) bool { return false }
		t.Cleanup(func() { trustDirInodes = old })
		f(t)
	})
}

func testTakeAfterRestoreLinksInsteadOfCopying(t *testing.T) {
	w := newWorker(t, t.TempDir())
	s := w.Store()
	for i := 0; i < 40; i++ {
		write(t, filepath.Join(s, fmt.Sprintf("d%d/f%d", i%4, i)), fmt.Sprintf("file %d", i), 0o644)
	}
	o := opts(10)
	a := take(t, w, o)
	write(t, filepath.Join(s, "d1/f5"), "changed after a", 0o644)
	os.Remove(filepath.Join(s, "d2/f6"))
	write(t, filepath.Join(s, "d3/extra"), "new after a", 0o644)
	b := take(t, w, o)

	r, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(w.Snapshots(), recordName)); err != nil {
		t.Fatalf("no restore record after a restore: %v", err)
	}
	c := take(t, w, o)
	if c.ID == "" {
		t.Fatalf("take after the restore made no snapshot (the store differs from the pre-restore one)")
	}
	// The restore's own changes are the restore's, not this take's: it
	// compares with what the restore put back (the restored snapshot, as
	// the record left it), so nothing is listed.
	if got := lines(mustRead(t, w.SnapshotChanges(c.ID))); len(got) != 0 {
		t.Errorf("the take after a restore lists the restore's changes: %q", got)
	}
	// Every file of c but the two the restore changed (their bytes are
	// a's, which the previous snapshot does not hold: copied) is an inode
	// some earlier snapshot holds.
	known := map[uint64]bool{}
	for _, id := range []string{a.ID, b.ID, r.PreRestore} {
		for _, ino := range snapInodes(t, w, id) {
			known[ino] = true
		}
	}
	for p, ino := range snapInodes(t, w, c.ID) {
		if !known[ino] && p != "d1/f5" && p != "d2/f6" {
			t.Errorf("%s was copied into a new inode after the restore", p)
		}
	}
	if _, err := os.Stat(filepath.Join(w.Snapshots(), recordName)); !os.IsNotExist(err) {
		t.Errorf("restore record still there after a snapshot recorded the live inodes: %v", err)
	}
	if got, want := treeState(t, s), treeState(t, filepath.Join(w.Snapshot(c.ID), "store")); got != want {
		t.Errorf("snapshot after restore differs from the store:\n%s\n---\n%s", got, want)
	}
}

// A restore of the newest snapshot over an unchanged store changes no
// byte: the takes after it find nothing changed (the record vouches for
// the new ctimes), make no snapshot, and stay that way.
func TestTakeAfterNoOpRestoreIsUnchanged(t *testing.T) {
	needRoot(t)
	bothInodeSources(t, testTakeAfterNoOpRestoreIsUnchanged)
}

func testTakeAfterNoOpRestoreIsUnchanged(t *testing.T) {
	w := newWorker(t, t.TempDir())
	fillStore(t, w.Store(), "a")
	o := opts(10)
	a := take(t, w, o)
	if _, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if r := take(t, w, o); !r.Unchanged || r.ID != "" {
			t.Fatalf("take %d after a no-op restore: %+v, want unchanged", i, r)
		}
	}
	// A change after it is still seen.
	write(t, filepath.Join(w.Store(), "notes.md"), "edited", 0o644)
	if r := take(t, w, o); r.Unchanged || r.ID == "" {
		t.Fatalf("take after an edit: %+v, want a snapshot", r)
	}
}

// The record vouches for an inode only while its ctime is the one
// recorded: a file rewritten in place after the restore, same size and
// mtime put back, is copied (its new bytes are in the snapshot).
func TestTakeAfterRestoreCopiesAFileWrittenSince(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	p := filepath.Join(w.Store(), "data")
	write(t, p, "AAAA", 0o644)
	write(t, filepath.Join(w.Store(), "other"), "other", 0o644)
	o := opts(10)
	a := take(t, w, o)
	write(t, filepath.Join(w.Store(), "other"), "other changed", 0o644)
	take(t, w, o)
	if _, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID}); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(p)
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("BBBB"), 0)
	f.Close()
	os.Chtimes(p, fi.ModTime(), fi.ModTime())
	c := take(t, w, o)
	if c.ID == "" {
		t.Fatal("no snapshot")
	}
	if got := string(mustRead(t, filepath.Join(w.Snapshot(c.ID), "store/data"))); got != "BBBB" {
		t.Fatalf("snapshot holds %q, want the bytes written after the restore", got)
	}
}

// A second restore (the undo) reuses the live files whose bytes the
// target snapshot holds, though the first restore gave them new ctimes:
// an unchanged file keeps its inode through restore and undo, and the
// undo is identical to the original.
func TestUndoRestoreReusesLiveFiles(t *testing.T) {
	needRoot(t)
	bothInodeSources(t, testUndoRestoreReusesLiveFiles)
}

func testUndoRestoreReusesLiveFiles(t *testing.T) {
	w := newWorker(t, t.TempDir())
	fillStore(t, w.Store(), "a")
	write(t, filepath.Join(w.Store(), "big/unchanged"), strings.Repeat("u", 100000), 0o644)
	o := opts(10)
	a := take(t, w, o)
	fillStore(t, w.Store(), "b")
	write(t, filepath.Join(w.Store(), "added"), "b only", 0o644)
	before := treeState(t, w.Store())
	take(t, w, o)
	ino := inode(t, filepath.Join(w.Store(), "big/unchanged"))
	r, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got := inode(t, filepath.Join(w.Store(), "big/unchanged")); got != ino {
		t.Fatalf("restore copied an unchanged file (inode %d -> %d)", ino, got)
	}
	if _, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: r.PreRestore}); err != nil {
		t.Fatal(err)
	}
	if got := inode(t, filepath.Join(w.Store(), "big/unchanged")); got != ino {
		t.Fatalf("the undo copied an unchanged file (inode %d -> %d)", ino, got)
	}
	if got := treeState(t, w.Store()); got != before {
		t.Fatalf("undo differs from the original:\n%s\n---\n%s", got, before)
	}
}

// A restore record that cannot be read is ignored: the take copies what
// it cannot trust, the snapshot is right, and the record is gone after.
func TestBadRestoreRecordIsIgnored(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	fillStore(t, w.Store(), "a")
	o := opts(10)
	a := take(t, w, o)
	fillStore(t, w.Store(), "b")
	take(t, w, o)
	if _, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.Snapshots(), recordName), []byte("{\"format\":1,garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := take(t, w, o)
	if c.ID == "" {
		t.Fatal("no snapshot")
	}
	if got, want := treeState(t, w.Store()), treeState(t, filepath.Join(w.Snapshot(c.ID), "store")); got != want {
		t.Fatalf("snapshot differs from the store")
	}
	if _, err := os.Stat(filepath.Join(w.Snapshots(), recordName)); !os.IsNotExist(err) {
		t.Fatalf("bad record still there: %v", err)
	}
}

// A hardlink between the store and a channel store (only the host can
// make one) comes back from a restore as one inode with two names, as
// the snapshot holds it.
func TestRestoreKeepsHardlinksAcrossStoreAndChannelStore(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	ch, err := w.ChannelStore("slack:C01")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.Store(), "shared.txt"), "one inode", 0o644)
	os.MkdirAll(ch, 0o755)
	if err := os.Link(filepath.Join(w.Store(), "shared.txt"), filepath.Join(ch, "shared.txt")); err != nil {
		t.Fatal(err)
	}
	o := opts(10)
	a := take(t, w, o)
	if inode(t, filepath.Join(w.Snapshot(a.ID), "store/shared.txt")) != inode(t, filepath.Join(w.Snapshot(a.ID), "channel-stores/slack%3AC01/shared.txt")) {
		t.Fatal("the snapshot does not keep the link")
	}
	os.Remove(filepath.Join(ch, "shared.txt"))
	write(t, filepath.Join(ch, "shared.txt"), "two inodes now", 0o644)
	take(t, w, o)
	if _, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID}); err != nil {
		t.Fatal(err)
	}
	if inode(t, filepath.Join(w.Store(), "shared.txt")) != inode(t, filepath.Join(ch, "shared.txt")) {
		t.Fatal("restore made two files of one hardlinked inode")
	}
	if got := string(mustRead(t, filepath.Join(ch, "shared.txt"))); got != "one inode" {
		t.Fatalf("channel store file holds %q", got)
	}
}

// diff of the live store against the newest snapshot right after a
// restore lists what the restore changed, not every file it put back.
func TestDiffAfterRestoreListsOnlyRealChanges(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	for i := 0; i < 20; i++ {
		write(t, filepath.Join(w.Store(), fmt.Sprintf("f%02d", i)), fmt.Sprintf("file %d", i), 0o644)
	}
	o := opts(10)
	a := take(t, w, o)
	write(t, filepath.Join(w.Store(), "f03"), "changed after a", 0o644)
	take(t, w, o)
	if _, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID}); err != nil {
		t.Fatal(err)
	}
	cs, err := Diff(context.Background(), w, "", "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cs {
		if c.Type == TypeFile {
			got = append(got, c.Line())
		}
	}
	if len(got) != 1 || got[0] != ">f.st...... store/f03" {
		t.Fatalf("diff after restore lists %q, want only store/f03", got)
	}
}

// A store folder that is gone is put back by a full restore (an empty one
// stands for it in the pre-restore snapshot); take says how to get it back.
func TestRestorePutsBackAGoneStore(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	write(t, filepath.Join(w.Store(), "a"), "kept", 0o644)
	o := opts(10)
	a := take(t, w, o)
	if err := os.RemoveAll(w.Store()); err != nil {
		t.Fatal(err)
	}
	if _, err := Take(t.Context(), w, o); err == nil || !strings.Contains(err.Error(), "no store folder") {
		t.Fatalf("take of a gone store = %v", err)
	}
	if _, err := Restore(t.Context(), w, RestoreOptions{Options: o, From: a.ID}); err != nil {
		t.Fatal(err)
	}
	if got := string(mustRead(t, filepath.Join(w.Store(), "a"))); got != "kept" {
		t.Fatalf("restored store holds %q", got)
	}
	if fi, err := os.Stat(w.StoreLocksMount()); err != nil || !fi.IsDir() {
		t.Fatalf("restored store lacks its .locks mount point: %v", err)
	}
}

// A link added between the store and a channel store changes the shared
// inode's ctime; that alone is no change to the store's name of it.
func TestLinkAcrossTreesIsNoContentChange(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	ch, _ := w.ChannelStore("c1")
	write(t, filepath.Join(w.Store(), "shared"), "data", 0o644)
	os.MkdirAll(ch, 0o755)
	os.Link(filepath.Join(w.Store(), "shared"), filepath.Join(ch, "shared"))
	take(t, w, opts(10))
	if err := os.Link(filepath.Join(ch, "shared"), filepath.Join(ch, "shared2")); err != nil {
		t.Fatal(err)
	}
	cs, err := Diff(t.Context(), w, "", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Path == "store/shared" {
			t.Fatalf("diff lists %q for a link added in the channel store", c.Line())
		}
	}
}
