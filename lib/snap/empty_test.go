package snap

import (
	"os"
	"path/filepath"
	"testing"
)

// docs/store.md step 5: a store with nothing in it has nothing to record, so the
// first take of an empty store (and empty channel stores) writes no
// snapshot; the first file makes one.
func TestFirstTakeOfAnEmptyStoreWritesNothing(t *testing.T) {
	w := newWorker(t, t.TempDir())
	ch, err := w.ChannelStore("slack:C01")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(ch, 0o755); err != nil {
		t.Fatal(err)
	}
	r := take(t, w, opts(5))
	if r.ID != "" || !r.Unchanged {
		t.Fatalf("empty store: snapshot %q (unchanged %v), want none", r.ID, r.Unchanged)
	}
	if ids, _ := IDs(w); len(ids) != 0 {
		t.Fatalf("snapshots after an empty take: %v", ids)
	}
	os.Mkdir(filepath.Join(w.Store(), "notes"), 0o755)
	if r := take(t, w, opts(5)); r.ID == "" {
		t.Fatal("a store with a folder in it made no snapshot")
	}
}
