package fsx

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestWriteFileReplacesWholeWithExactMode(t *testing.T) {
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	dir := t.TempDir()
	p := filepath.Join(dir, "f.json")
	for i, c := range []struct {
		data []byte
		perm os.FileMode
	}{
		{[]byte("first, longer than the second\n"), 0o644},
		{[]byte("second\n"), 0o640},
		{nil, 0o600},
		{bytes.Repeat([]byte("x"), 1<<20), 0o644},
	} {
		if err := WriteFile(p, c.data, c.perm); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, c.data) {
			t.Fatalf("write %d: read back %d bytes (%v), want %d", i, len(got), err, len(c.data))
		}
		fi, _ := os.Stat(p)
		if fi.Mode().Perm() != c.perm {
			t.Errorf("write %d: mode %v, want %v (umask must not apply)", i, fi.Mode().Perm(), c.perm)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("temporary files left beside the file: %v", ents)
	}
}

func TestWriteFileReplacesTheInodeNotTheContent(t *testing.T) {
	// A reader holding the old file keeps the old content: the new one is
	// renamed over, never written in place.
	p := filepath.Join(t.TempDir(), "f")
	if err := WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := WriteFile(p, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	n, _ := r.ReadAt(buf, 0)
	if string(buf[:n]) != "old" {
		t.Errorf("open reader sees %q after a replace, want the old content", buf[:n])
	}
}

func TestWriteFileIntoMissingFolderFails(t *testing.T) {
	err := WriteFile(filepath.Join(t.TempDir(), "no", "f"), []byte("x"), 0o644)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want one wrapping fs.ErrNotExist", err)
	}
}

func TestSyncDir(t *testing.T) {
	if err := SyncDir(t.TempDir()); err != nil {
		t.Error(err)
	}
	if err := SyncDir(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing folder: %v", err)
	}
}

func TestMkdirDurableExactModeAndLeavesExisting(t *testing.T) {
	old := unix.Umask(0o022)
	defer unix.Umask(old)
	dir := filepath.Join(t.TempDir(), "locks")
	if err := MkdirDurable(dir, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(dir)
	if fi.Mode()&(os.ModePerm|os.ModeSticky) != os.ModePerm|os.ModeSticky {
		t.Errorf("mode %v, want drwxrwxrwt", fi.Mode())
	}
	os.Chmod(dir, 0o700)
	if err := MkdirDurable(dir, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("an existing folder was changed to %v", fi.Mode())
	}
	if err := MkdirDurable(filepath.Join(t.TempDir(), "a", "b"), 0o755); err == nil {
		t.Error("made two levels at once")
	}
}

func TestWriteNewNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "spec.toml")
	if err := WriteNew(p, []byte("one"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := WriteNew(p, []byte("two"), 0o640); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second WriteNew: %v, want fs.ErrExist", err)
	}
	if got, _ := os.ReadFile(p); string(got) != "one" {
		t.Errorf("content %q, want the first", got)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", fi.Mode())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
}
