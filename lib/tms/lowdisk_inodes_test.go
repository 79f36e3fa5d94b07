package tms

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/home"
)

// Containment, Disk: the low-disk hold also checks free inodes. A real
// tmpfs of 64 MiB and 64 inodes has bytes to spare and few inodes: a
// store.min_free of 1 MiB (256 inodes wanted) holds, naming the inodes;
// 128 KiB (32 wanted) does not; 128 MiB holds by bytes.
func TestLowDiskAlsoWantsFreeInodes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root; CI runs as root")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64m,nr_inodes=64,mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	for _, d := range []string{"data", "workers"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	h, err := home.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(h.Data(), &st); err != nil || st.Files != 64 || st.Ffree >= 64 {
		t.Fatalf("tmpfs: %d inodes, %d free, %v", st.Files, st.Ffree, err)
	}
	org := defaultOrg(t)
	for _, c := range []struct {
		minFree int64
		why     string
	}{
		{1 << 20, "inodes free, store.min_free 1M wants 256)"},
		{128 << 10, ""},
		{128 << 20, "free, store.min_free is 128M)"},
	} {
		org.Storage.MinFree = c.minFree
		low, why, err := LowDisk(h, org)
		if err != nil || low != (c.why != "") || !strings.Contains(why, c.why) {
			t.Errorf("min_free %d: low %v why %q err %v; want %q", c.minFree, low, why, err, c.why)
		}
	}
}
