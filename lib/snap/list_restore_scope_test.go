package snap

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A full restore replaces the store and every channel store the snapshot
// holds (putting back one gone from the live tree) and leaves a channel
// store created after the snapshot as it is: not deleted, not in the
// change list; the pre-restore snapshot holds it (man roster-snap,
// restore).
func TestFullRestoreLeavesAChannelStoreNewerThanTheSnapshot(t *testing.T) {
	w := newWorker(t, t.TempDir())
	write(t, filepath.Join(w.Store(), "a"), "a", 0o644)
	c1, err := w.ChannelStore("slack:C1")
	if err != nil {
		t.Fatal(err)
	}
	c2, err := w.ChannelStore("slack:C2")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(c1, "x"), "x", 0o644)
	o := opts(10)
	r1 := take(t, w, o)

	write(t, filepath.Join(c2, "y"), "y", 0o644)
	os.RemoveAll(c1)
	write(t, filepath.Join(w.Store(), "a"), "changed", 0o644)

	check := func(what string, cs []Change) {
		t.Helper()
		var ls []string
		for i := range cs {
			ls = append(ls, cs[i].Line())
		}
		for _, want := range []string{">f.st...... store/a", "cd+++++++++ channel-stores/slack%3AC1/", ">f+++++++++ channel-stores/slack%3AC1/x"} {
			if !contains(ls, want) {
				t.Errorf("%s: missing %q in %q", what, want, ls)
			}
		}
		for _, l := range ls {
			if strings.Contains(l, "C2") {
				t.Errorf("%s lists the newer channel store: %q", what, l)
			}
		}
	}
	dry, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: r1.ID, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	check("--dry-run", dry.Changes)
	res, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: r1.ID})
	if err != nil {
		t.Fatal(err)
	}
	check("restore", res.Changes)

	if b, err := os.ReadFile(filepath.Join(c2, "y")); err != nil || string(b) != "y" {
		t.Errorf("the newer channel store was touched: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(c1, "x")); err != nil || string(b) != "x" {
		t.Errorf("the channel store gone from the live tree was not put back: %q %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(w.Store(), "a")); string(b) != "a" {
		t.Errorf("store not restored: %q", b)
	}
	m, err := ParseManifest(mustRead(t, w.SnapshotManifest(res.PreRestore)))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range m.Entries {
		found = found || e.Path == "channel-stores/slack%3AC2/y"
	}
	if !found {
		t.Error("the pre-restore snapshot does not hold the newer channel store")
	}
}
