package snap

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
)

// A take that fails for a reason of the store's own (here the newest
// manifest cannot be read: every take refuses) records why in
// store-snapshots/.take-failed, keeping the first failure's time; Failed
// reads it (the worker's hold). A busy lock or low disk records nothing.
// Fixed, the next take succeeds and removes it.
func TestTakeFailureRecordedAndCleared(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	write(t, filepath.Join(w.Store(), "f"), "one", 0o644)
	o := opts(10)
	r1 := take(t, w, o)
	if f, err := Failed(context.Background(), w); err != nil || f != nil {
		t.Fatalf("after a good take: %+v, %v", f, err)
	}
	os.WriteFile(w.SnapshotManifest(r1.ID), []byte("not a manifest\n"), 0o600)
	write(t, filepath.Join(w.Store(), "f"), "two", 0o644)
	if _, err := Take(context.Background(), w, o); !errors.Is(err, errs.ErrRefused) {
		t.Fatalf("take over a broken manifest = %v", err)
	}
	first, err := Failed(context.Background(), w)
	if err != nil || first == nil || !strings.Contains(first.Error, "manifest") || first.Since.IsZero() {
		t.Fatalf("failure record: %+v, %v", first, err)
	}
	if _, err := Take(context.Background(), w, o); err == nil {
		t.Fatal("second take succeeded")
	}
	again, _ := Failed(context.Background(), w)
	if again == nil || !again.Since.Equal(first.Since) || !again.At.After(first.At) {
		t.Fatalf("second failure: %+v, first %+v", again, first)
	}
	// Fixed: the broken snapshot moved away, a take succeeds and lifts it.
	os.Rename(w.Snapshot(r1.ID), filepath.Join(t.TempDir(), r1.ID))
	if r := take(t, w, o); r.ID == "" {
		t.Fatal("no snapshot after the fix")
	}
	if f, err := Failed(context.Background(), w); err != nil || f != nil {
		t.Fatalf("after the fix: %+v, %v", f, err)
	}
	// Low disk and a busy lock are not the store's failures.
	low := o
	low.MinFree = 1 << 62
	write(t, filepath.Join(w.Store(), "f"), "three", 0o644)
	if _, err := Take(context.Background(), w, low); err == nil {
		t.Fatal("take with no room succeeded")
	}
	lf, err := os.Open(w.StoreLock())
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := fsx.Flock(context.Background(), lf, true, 0); err != nil { // a box's shared hold
		t.Fatal(err)
	}
	busy := o
	busy.Wait = NoWait
	if _, err := Take(context.Background(), w, busy); !errors.Is(err, errs.ErrBusy) {
		t.Fatalf("take under a held lock = %v", err)
	}
	if f, _ := Failed(context.Background(), w); f != nil {
		t.Fatalf("low disk or a busy lock recorded a failure: %+v", f)
	}
}
