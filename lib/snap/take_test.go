package snap

import (
	"os"
	"path/filepath"
	"testing"
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
	ch, _ := os.ReadFile(w.SnapshotChanges(r2.ID))
	t.Logf("changes:\n%s", ch)
	r3 := take(t, w, o)
	if !r3.Unchanged || r3.ID != "" {
		t.Errorf("unchanged store made a snapshot: %+v", r3)
	}
}
