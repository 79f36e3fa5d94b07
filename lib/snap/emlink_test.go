package snap

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// docs/store.md step 4: on EMLINK (too many links to one inode) make a fresh
// copy instead of failing. A hardlink group of 33,000 names kept unchanged
// across snapshots adds 33,000 links per snapshot to one snapshot inode, so
// the second take passes ext4's 65,000-link limit.
func TestEMLINKMakesAFreshCopyInsteadOfFailing(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("links 99,000 names")
	}
	dir := t.TempDir()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil || fs.Type != 0xEF53 {
		t.Skip("the link limit this test reaches is ext4's (65,000); the temp folder is not on ext4")
	}
	w := newWorker(t, dir)
	g := filepath.Join(w.Store(), "g")
	if err := os.Mkdir(g, 0o755); err != nil {
		t.Fatal(err)
	}
	const names = 33000
	write(t, filepath.Join(g, "f0"), "shared bytes", 0o644)
	for i := 1; i < names; i++ {
		if err := os.Link(filepath.Join(g, "f0"), filepath.Join(g, fmt.Sprint("f", i))); err != nil {
			t.Fatal(err)
		}
	}
	o := opts(1000)
	sawEMLINK, last := false, ""
	for i := 0; i < 3; i++ {
		write(t, filepath.Join(w.Store(), "counter"), fmt.Sprint(i), 0o644)
		r := take(t, w, o) // fails the test on any error, EMLINK included
		if r.ID == "" {
			t.Fatalf("take %d made no snapshot", i)
		}
		snapG := filepath.Join(w.Snapshot(r.ID), "store", "g")
		inodes := map[uint64]bool{}
		for j := 0; j < names; j++ {
			p := filepath.Join(snapG, fmt.Sprint("f", j))
			data, err := os.ReadFile(p)
			if err != nil || string(data) != "shared bytes" {
				t.Fatalf("take %d: %s: %q, %v", i, p, data, err)
			}
			var st syscall.Stat_t
			if err := syscall.Stat(p, &st); err != nil {
				t.Fatal(err)
			}
			inodes[st.Ino] = true
		}
		if len(inodes) > 1 {
			sawEMLINK = true
		}
		// A full inode gets one fresh copy that the later names link
		// to, not a copy per name.
		if len(inodes) > 2 {
			t.Fatalf("take %d: the group's %d names are on %d inodes, want at most 2", i, names, len(inodes))
		}
		last = r.ID
	}
	if !sawEMLINK {
		t.Fatal("no take ever reached the link limit: the test did not exercise EMLINK")
	}
	// The manifest keeps the source's one group: a restore gives back one
	// inode with every name (the live group, still there, is not reused:
	// its old names would count toward the limit).
	write(t, filepath.Join(w.Store(), "counter"), "changed", 0o644)
	if _, err := Restore(t.Context(), w, RestoreOptions{Options: o, From: last}); err != nil {
		t.Fatal(err)
	}
	inodes := map[uint64]bool{}
	for j := 0; j < names; j++ {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(g, fmt.Sprint("f", j)), &st); err != nil {
			t.Fatal(err)
		}
		inodes[st.Ino] = true
	}
	if len(inodes) != 1 {
		t.Fatalf("restored group is on %d inodes, want 1", len(inodes))
	}
}
