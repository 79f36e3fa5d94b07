package snap

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/home"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (chown, real owners); CI runs as root")
	}
}

// newWorker makes a worker folder by hand: store/ with its .locks mount
// point, locks/ (1777) with the store lock, as `roster worker add` does.
func newWorker(t *testing.T, dir string) home.Worker {
	t.Helper()
	h := home.Home{Dir: dir}
	w := h.Worker("dobby")
	for _, d := range []string{w.Store(), w.StoreLocksMount(), w.Locks(), w.Runs()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(w.Locks(), 0o1777)
	if err := os.WriteFile(w.StoreLock(), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

func opts(keep int) Options {
	clock := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	return Options{Keep: keep, Wait: 2 * time.Second, Now: func() time.Time {
		clock = clock.Add(time.Second)
		return clock
	}}
}

func take(t *testing.T, w home.Worker, o Options) *Result {
	t.Helper()
	r, err := Take(context.Background(), w, o)
	if err != nil {
		t.Fatalf("take: %v", err)
	}
	return r
}

func write(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, mode)
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// treeState describes a tree as text: every entry's path, type, mode,
// owner, size, mtime, content hash or link target. The root's .locks is
// left out (it is the lock folder's mount point, never snapshotted).
func treeState(t *testing.T, dir string) string {
	t.Helper()
	return treeStateNoRead(t, dir, "")
}

// treeStateNoRead is treeState, but the file at noRead (a path below dir)
// is never opened (a lease is held on it: an open would wait for the
// lease to break): its inode number stands for its content.
func treeStateNoRead(t *testing.T, dir, noRead string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == home.StoreLocksName {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		line := fmt.Sprintf("%q %o %d:%d %d", rel, st.Mode, st.Uid, st.Gid, st.Mtim.Nano())
		switch fi.Mode().Type() {
		case 0:
			if noRead != "" && rel == noRead {
				line += fmt.Sprintf(" ino %d", st.Ino)
				break
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %d %x", len(data), sha256.Sum256(data))
		case fs.ModeSymlink:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case fs.ModeDir:
		default:
			return nil // specials are not snapshotted
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func lines(b []byte) []string {
	s := strings.TrimRight(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// mustOpenDir opens folder dir (closed when the test ends).
func mustOpenDir(t *testing.T, dir string) int {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}
