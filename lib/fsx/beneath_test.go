package fsx

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// boxDir is a folder laid out as a hostile box might leave it.
func boxDir(t *testing.T) (*os.File, string) {
	t.Helper()
	root := t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o600)
	os.WriteFile(filepath.Join(root, "ok.json"), []byte(`{"ok":true}`), 0o644)
	os.Mkdir(filepath.Join(root, "sub"), 0o755)
	os.WriteFile(filepath.Join(root, "sub", "inner"), []byte("inner"), 0o644)
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link"))
	os.Symlink(outside, filepath.Join(root, "dirlink"))
	os.Symlink("ok.json", filepath.Join(root, "rellink"))
	unix.Mkfifo(filepath.Join(root, "fifo"), 0o666)
	d, err := OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, outside
}

func TestOpenBeneathRefusesEscapes(t *testing.T) {
	d, outside := boxDir(t)
	for _, c := range []struct {
		name string
		want error
	}{
		{"link", unix.ELOOP},
		{"rellink", unix.ELOOP},
		{"dirlink/secret", unix.ELOOP},
		{"../" + filepath.Base(outside) + "/secret", unix.EXDEV},
		{"sub/../../x", unix.EXDEV},
		{filepath.Join(outside, "secret"), unix.EXDEV},
		{"fifo", ErrNotRegular},
		{"sub", ErrNotRegular},
		{"missing", unix.ENOENT},
	} {
		f, err := OpenBeneath(d, c.name, unix.O_RDONLY, 0)
		if err == nil {
			f.Close()
			t.Errorf("%s: opened", c.name)
			continue
		}
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	for _, ok := range []string{"ok.json", "sub/inner", "sub/../ok.json"} {
		f, err := OpenBeneath(d, ok, unix.O_RDONLY, 0)
		if err != nil {
			t.Errorf("%s: %v", ok, err)
			continue
		}
		f.Close()
	}
}

func TestOpenBeneathFIFODoesNotBlock(t *testing.T) {
	d, _ := boxDir(t)
	done := make(chan error, 1)
	go func() {
		f, err := OpenBeneath(d, "fifo", unix.O_RDONLY, 0)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("fifo: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("opening a FIFO with no writer blocked")
	}
	// Write-only open of a FIFO with no reader fails at once too.
	if _, err := OpenBeneath(d, "fifo", unix.O_WRONLY, 0); err == nil {
		t.Error("opened a FIFO for writing")
	}
}

func TestOpenBeneathCreates(t *testing.T) {
	d, outside := boxDir(t)
	f, err := OpenBeneath(d, "new", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Never through a dangling symlink.
	os.Symlink(filepath.Join(outside, "made"), filepath.Join(d.Name(), "dangling"))
	if _, err := OpenBeneath(d, "dangling", unix.O_WRONLY|unix.O_CREAT, 0o644); err == nil {
		t.Error("created through a dangling symlink")
	}
	if _, err := os.Lstat(filepath.Join(outside, "made")); err == nil {
		t.Error("a file was made outside")
	}
}

func TestReadBeneathSizeBound(t *testing.T) {
	d, _ := boxDir(t)
	os.WriteFile(filepath.Join(d.Name(), "ten"), []byte("0123456789"), 0o644)
	if data, err := ReadBeneath(d, "ten", 10); err != nil || string(data) != "0123456789" {
		t.Errorf("at the bound: %q, %v", data, err)
	}
	if _, err := ReadBeneath(d, "ten", 9); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the bound: %v, want ErrTooLarge", err)
	}
	if _, err := ReadBeneath(d, "link", 100); !errors.Is(err, unix.ELOOP) {
		t.Errorf("symlink: %v", err)
	}
	// A huge file is refused without reading it all.
	big, _ := os.Create(filepath.Join(d.Name(), "big"))
	big.Truncate(1 << 40)
	big.Close()
	if _, err := ReadBeneath(d, "big", 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Errorf("sparse 1 TiB file: %v", err)
	}
}

func TestOpenDirRefusesSymlinkAndFile(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "real"), 0o755)
	os.Symlink(filepath.Join(root, "real"), filepath.Join(root, "link"))
	os.WriteFile(filepath.Join(root, "file"), nil, 0o644)
	// O_DIRECTORY|O_NOFOLLOW on a symlink: ENOTDIR (or ELOOP on some kernels).
	if _, err := OpenDir(filepath.Join(root, "link")); !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.ELOOP) {
		t.Errorf("symlink: %v", err)
	}
	if _, err := OpenDir(filepath.Join(root, "file")); !errors.Is(err, unix.ENOTDIR) {
		t.Errorf("file: %v", err)
	}
	d, err := OpenDir(filepath.Join(root, "real"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if !strings.HasSuffix(d.Name(), "/real") {
		t.Errorf("name %q", d.Name())
	}
}
