package runs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/home"
)

// With the cache on, a runs folder unchanged since a trusted listing is
// not listed again; a run made or removed is seen at the next call (a
// folder changed within the racy window is listed again, so a change in
// the same timestamp tick is never missed); off, every call lists.
func TestIDsCacheFollowsTheFolder(t *testing.T) {
	h := home.Home{Dir: t.TempDir()}
	w := h.Worker("dobby")
	mk := func(id string) {
		if err := os.MkdirAll(w.Run(id), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a, b, c := "2026-12-07-10-00-00-aaaa", "2026-12-07-11-00-00-bbbb", "2026-12-07-12-00-00-cccc"
	mk(b)
	mk(a)
	os.WriteFile(filepath.Join(w.Runs(), "not-a-run"), nil, 0o644)
	CacheIDs(true)
	t.Cleanup(func() { CacheIDs(false) })
	look := func(want ...string) int64 {
		t.Helper()
		n := listings.Load()
		ids, err := IDs(w)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids, want) {
			t.Fatalf("IDs = %v, want %v", ids, want)
		}
		ids[0] = "changed by the caller" // never the cache's own slice
		return listings.Load() - n
	}
	look(a, b) // racy (just made): listed, and listed again next time
	if n := look(a, b); n != 1 {
		t.Fatalf("a folder changed within the racy window was not listed again (%d listings)", n)
	}
	time.Sleep(1100 * time.Millisecond) // past fsx.RacyWindow
	look(a, b)
	if n := look(a, b); n != 0 {
		t.Fatalf("an unchanged folder was listed again (%d listings)", n)
	}
	mk(c)
	if n := look(a, b, c); n != 1 {
		t.Fatalf("a new run: %d listings", n)
	}
	time.Sleep(1100 * time.Millisecond)
	look(a, b, c)
	if err := os.Remove(w.Run(a)); err != nil {
		t.Fatal(err)
	}
	if n := look(b, c); n != 1 {
		t.Fatalf("a removed run: %d listings", n)
	}
	CacheIDs(false)
	time.Sleep(1100 * time.Millisecond)
	look(b, c)
	if n := look(b, c); n != 1 {
		t.Fatalf("cache off: %d listings, want every call", n)
	}
	// No runs folder: none, no error.
	if ids, err := IDs(h.Worker("nobody")); err != nil || ids != nil {
		t.Fatalf("no folder: %v %v", ids, err)
	}
}
