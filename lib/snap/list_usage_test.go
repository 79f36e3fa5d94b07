package snap

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ls sizes: bytes is the apparent size of the files (a sparse file counts
// whole, each inode once); own and shared are disk space, so a 1 GiB
// sparse file holding 4 KiB owns about 4 KiB, what deleting the snapshot
// frees; an inode linked from a later snapshot too is shared, counted
// once, and no longer anyone's own.
func TestListOwnAndSharedCountDiskSpaceBytesApparent(t *testing.T) {
	w := newWorker(t, t.TempDir())
	s := w.Store()
	f, err := os.Create(filepath.Join(s, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(strings.Repeat("x", 4096)), 1<<29); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	write(t, filepath.Join(s, "h1"), strings.Repeat("y", 64<<10), 0o644)
	if err := os.Link(filepath.Join(s, "h1"), filepath.Join(s, "h2")); err != nil {
		t.Fatal(err)
	}
	o := opts(10)
	r1 := take(t, w, o)

	infos, err := List(context.Background(), w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := infos[0]
	const data = 4096 + 64<<10 // the blocks the files hold (h1 and h2 are one inode)
	if in.Bytes != 1<<30+64<<10 {
		t.Errorf("bytes %d, want the apparent %d", in.Bytes, 1<<30+64<<10)
	}
	if in.Own < data || in.Own > data+1<<20 || in.Shared != 0 {
		t.Errorf("only snapshot: own %d shared %d, want own about %d (not the 1 GiB length), nothing shared", in.Own, in.Shared, data)
	}

	write(t, filepath.Join(s, "new"), "new", 0o644)
	r2 := take(t, w, o)
	infos, err = List(context.Background(), w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		if in.Shared < data || in.Shared > data+64<<10 {
			t.Errorf("%s: shared %d, want the unchanged files' %d once", in.ID, in.Shared, data)
		}
		if in.Own >= data {
			t.Errorf("%s: own %d still counts the shared files", in.ID, in.Own)
		}
		if in.ID == r2.ID && in.Bytes != 1<<30+64<<10+3 || in.ID == r1.ID && in.Bytes != 1<<30+64<<10 {
			t.Errorf("%s: bytes %d", in.ID, in.Bytes)
		}
	}
}
