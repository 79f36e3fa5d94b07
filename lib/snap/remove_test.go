package snap

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// removeAt deletes a whole tree (many folders, a big one, nesting,
// symlinks, a FIFO) and never follows a symlink out of it.
func TestRemoveAtDeletesTreeNeverFollowsLinks(t *testing.T) {
	needRoot(t) // a mode-000 folder inside
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	write(t, filepath.Join(outside, "sentinel"), "keep me", 0o644)
	tree := filepath.Join(base, "tree")
	for i := 0; i < 40; i++ {
		write(t, filepath.Join(tree, fmt.Sprintf("d%d/e/f%d", i%5, i)), "x", 0o644)
	}
	for i := 0; i < 600; i++ { // more than one batch in one folder
		write(t, filepath.Join(tree, "big", fmt.Sprint(i)), "x", 0o644)
	}
	os.MkdirAll(filepath.Join(tree, "a/b/c/d/e/f"), 0o755)
	os.Symlink(outside, filepath.Join(tree, "link-to-outside"))
	os.Symlink(outside, filepath.Join(tree, "a/b/link"))
	unix.Mkfifo(filepath.Join(tree, "a/fifo"), 0o644)
	os.Chmod(filepath.Join(tree, "a/b/c"), 0o000) // root deletes it anyway
	fd, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := removeAt(fd, "tree"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(tree); !os.IsNotExist(err) {
		t.Fatalf("tree still there: %v", err)
	}
	if got := string(mustRead(t, filepath.Join(outside, "sentinel"))); got != "keep me" {
		t.Fatalf("sentinel = %q", got)
	}
	// A name that is gone, a plain file and a symlink to a folder.
	if err := removeAt(fd, "tree"); err != nil {
		t.Fatalf("removing a missing name: %v", err)
	}
	os.Symlink(outside, filepath.Join(base, "l"))
	if err := removeAt(fd, "l"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(outside, "sentinel")); err != nil {
		t.Fatalf("removing a symlink touched its target: %v", err)
	}
}
