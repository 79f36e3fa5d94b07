package fsx

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestOpenRegularRefusesSymlinkFIFOAndFolder(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := OpenRegular(file)
	if err != nil {
		t.Fatalf("regular file refused: %v", err)
	}
	f.Close()
	link := filepath.Join(dir, "l")
	os.Symlink("/etc/passwd", link)
	if _, err := OpenRegular(link); !errors.Is(err, ErrSymlink) {
		t.Errorf("symlink: %v, want ErrSymlink", err)
	}
	fifo := filepath.Join(dir, "p")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenRegular(fifo); !errors.Is(err, ErrNotRegular) { // returns at once: O_NONBLOCK
		t.Errorf("fifo: %v, want ErrNotRegular", err)
	}
	if _, err := OpenRegular(dir); !errors.Is(err, ErrNotRegular) {
		t.Errorf("folder: %v, want ErrNotRegular", err)
	}
	if _, err := OpenRegular(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v, want ErrNotExist", err)
	}
}
