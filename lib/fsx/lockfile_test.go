package fsx

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func lockDir(t *testing.T) *os.File {
	t.Helper()
	root := t.TempDir()
	os.Chmod(root, os.ModeSticky|0o777)
	d, err := OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestOpenLockFileCreatesMode0666(t *testing.T) {
	old := unix.Umask(0o022)
	defer unix.Umask(old)
	d := lockDir(t)
	f, err := OpenLockFile(d, "nightly")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := os.Stat(filepath.Join(d.Name(), "nightly"))
	if fi.Mode() != 0o666 {
		t.Errorf("mode %v, want -rw-rw-rw-", fi.Mode())
	}
	assertReadOnly(t, f)
	// Opening it again opens the same file.
	g, err := OpenLockFile(d, "nightly")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if a, b := statOf(t, f), statOf(t, g); a.Ino != b.Ino {
		t.Error("second open made another file")
	}
}

func statOf(t *testing.T, f *os.File) unix.Stat_t {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func assertReadOnly(t *testing.T, f *os.File) {
	t.Helper()
	fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fl&unix.O_ACCMODE != unix.O_RDONLY {
		t.Errorf("lock file opened with access mode %#o, want read-only", fl&unix.O_ACCMODE)
	}
}

func TestOpenLockFileUsesExistingRootFileAsIs(t *testing.T) {
	d := lockDir(t)
	p := filepath.Join(d.Name(), "store")
	os.WriteFile(p, nil, 0o644)
	f, err := OpenLockFile(d, "store")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	assertReadOnly(t, f)
	if err := Flock(t.Context(), f, false, 0); err != nil {
		t.Errorf("flock on a read-only descriptor: %v", err)
	}
	if fi, _ := os.Stat(p); fi.Mode() != 0o644 {
		t.Errorf("mode changed to %v", fi.Mode())
	}
}

func TestOpenLockFileRefusesSymlinkFIFOAndFolder(t *testing.T) {
	d := lockDir(t)
	outside := filepath.Join(t.TempDir(), "target")
	os.WriteFile(outside, []byte("keep"), 0o600)
	os.Symlink(outside, filepath.Join(d.Name(), "link"))
	os.Symlink(filepath.Join(t.TempDir(), "nothing"), filepath.Join(d.Name(), "dangling"))
	unix.Mkfifo(filepath.Join(d.Name(), "fifo"), 0o666)
	os.Mkdir(filepath.Join(d.Name(), "dir"), 0o755)

	for _, c := range []struct {
		name string
		want error
	}{
		{"link", ErrSymlink},
		{"dangling", ErrSymlink},
		{"fifo", ErrNotRegular},
		{"dir", ErrNotRegular},
	} {
		done := make(chan error, 1)
		go func() {
			f, err := OpenLockFile(d, c.name)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: OpenLockFile blocked", c.name)
		}
	}
	if !errors.Is(ErrSymlink, unix.ELOOP) {
		t.Error("ErrSymlink does not match ELOOP")
	}
	if data, _ := os.ReadFile(outside); string(data) != "keep" {
		t.Errorf("symlink target changed: %q", data)
	}
	if fi, _ := os.Stat(outside); fi.Mode() != 0o600 {
		t.Errorf("symlink target mode changed: %v", fi.Mode())
	}
}
