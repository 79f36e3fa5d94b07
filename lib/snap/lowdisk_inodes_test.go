package snap

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Containment, Disk: a take also wants free inodes (one per 4 KiB of
// store.min_free). On a real tmpfs of 64 MiB and 64 inodes, a min_free of
// 1 MiB (256 inodes) skips the take naming the inodes, though bytes are
// plenty; 64 KiB (16 inodes) takes.
func TestTakeSkippedWhenFreeInodesAreLow(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64m,nr_inodes=64,mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	w := newWorker(t, dir)
	write(t, filepath.Join(w.Store(), "f"), "one", 0o644)
	o := opts(3)
	o.MinFree = 1 << 20
	_, err := Take(context.Background(), w, o)
	if err == nil || !errors.Is(err, lowDisk) || !strings.Contains(err.Error(), "inodes free on the data tree's filesystem, store.min_free of 1048576 bytes wants 256") {
		t.Fatalf("take with few inodes free: %v", err)
	}
	o.MinFree = 64 << 10
	if r := take(t, w, o); r.ID == "" {
		t.Fatal("no snapshot with inodes to spare")
	}
}
