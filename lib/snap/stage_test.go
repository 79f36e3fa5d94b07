package snap

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A folder's getdents inodes are those fstatat gives, for its regular
// files only; anything else (a folder, a symlink, a name not there) is
// "no regular file", and a folder that cannot be read is "ask fstatat".
func TestFolderInodes(t *testing.T) {
	dir := t.TempDir()
	if !inoTrusted(mustOpenDir(t, dir)) {
		t.Skip("the test folder's filesystem is not one whose getdents inodes are trusted")
	}
	write(t, filepath.Join(dir, "a"), "a", 0o644)
	write(t, filepath.Join(dir, "b"), "b", 0o600)
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(dir, "l")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(dir, "p"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &folderInodes{src: mustOpenDir(t, dir)}
	for _, name := range []string{"a", "b"} {
		if got, ok := f.ino(name); !ok || got != inode(t, filepath.Join(dir, name)) {
			t.Errorf("ino(%s) = %d, %v; want %d, true", name, got, ok, inode(t, filepath.Join(dir, name)))
		}
	}
	for _, name := range []string{"d", "l", "p", "missing", ".", ".."} {
		if got, ok := f.ino(name); !ok || got != 0 {
			t.Errorf("ino(%s) = %d, %v; want 0, true (not a regular file)", name, got, ok)
		}
	}
	var none *folderInodes
	if got, ok := none.ino("a"); ok || got != 0 {
		t.Errorf("nil: ino = %d, %v; want 0, false", got, ok)
	}
	file, err := unix.Open(filepath.Join(dir, "a"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(file)
	notDir := &folderInodes{src: file}
	if got, ok := notDir.ino("a"); ok || got != 0 {
		t.Errorf("unreadable folder: ino = %d, %v; want 0, false", got, ok)
	}
	// With a device to be on (the pre-restore snapshot's folders: the
	// snapshots' device), a folder elsewhere is not listed.
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	onDev := listInodes(mustOpenDir(t, dir), true, st.Dev)
	if got, ok := onDev.ino("a"); !ok || got != inode(t, filepath.Join(dir, "a")) {
		t.Errorf("on the device: ino(a) = %d, %v; want %d, true", got, ok, inode(t, filepath.Join(dir, "a")))
	}
	elsewhere := listInodes(mustOpenDir(t, dir), true, st.Dev+1)
	if got, ok := elsewhere.ino("a"); ok || got != 0 {
		t.Errorf("another device: ino = %d, %v; want 0, false", got, ok)
	}
	if listInodes(mustOpenDir(t, dir), false, 0) != nil || listInodes(-1, true, 0) != nil {
		t.Error("listInodes listed an untrusted filesystem's folder or no folder")
	}
}

// inoTrusted names the filesystems by their magic: /proc is not one.
func TestInoTrustedRefusesOthers(t *testing.T) {
	if inoTrusted(mustOpenDir(t, "/proc")) {
		t.Fatal("procfs trusted for getdents inodes")
	}
	if inoTrusted(-1) {
		t.Fatal("a bad descriptor trusted")
	}
}
