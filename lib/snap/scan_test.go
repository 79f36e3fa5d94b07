package snap

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The fast "nothing changed" scan sees every kind of change, wherever it
// is in the tree, and nothing else: each case starts from a snapshot of
// the same store, makes one change, and takes again.
func TestScanSeesEveryChangeAndOnlyChanges(t *testing.T) {
	needRoot(t)
	old := time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)
	cases := []struct {
		name    string
		change  func(s string)
		changed bool
	}{
		{"nothing", func(s string) {}, false},
		{"content same size and mtime", func(s string) {
			p := filepath.Join(s, "a/b/c/deep")
			f, _ := os.OpenFile(p, os.O_WRONLY, 0)
			f.WriteAt([]byte("X"), 0)
			f.Close()
			os.Chtimes(p, old, old)
		}, true},
		{"chmod deep", func(s string) { os.Chmod(filepath.Join(s, "a/b/c/deep"), 0o600) }, true},
		{"chown", func(s string) { os.Chown(filepath.Join(s, "top"), 4242, 0) }, true},
		{"symlink retarget", func(s string) {
			os.Remove(filepath.Join(s, "a/link"))
			os.Symlink("elsewhere", filepath.Join(s, "a/link"))
		}, true},
		{"new file deep", func(s string) { write(t, filepath.Join(s, "a/b/c/new"), "n", 0o644) }, true},
		{"deleted file", func(s string) { os.Remove(filepath.Join(s, "z/last")) }, true},
		{"file becomes folder", func(s string) {
			os.Remove(filepath.Join(s, "top"))
			os.Mkdir(filepath.Join(s, "top"), 0o755)
		}, true},
		{"folder becomes file", func(s string) {
			os.RemoveAll(filepath.Join(s, "z"))
			write(t, filepath.Join(s, "z"), "z", 0o644)
		}, true},
		{"folder mode", func(s string) { os.Chmod(filepath.Join(s, "a/b"), 0o700) }, true},
		{"new FIFO only", func(s string) {
			unix.Mkfifo(filepath.Join(s, "a/fifo"), 0o644)
			os.Chtimes(filepath.Join(s, "a"), old, old)
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorker(t, t.TempDir())
			s := w.Store()
			write(t, filepath.Join(s, "top"), "top", 0o644)
			write(t, filepath.Join(s, "a/b/c/deep"), "deep data", 0o644)
			write(t, filepath.Join(s, "z/last"), "last", 0o644)
			os.Symlink("target", filepath.Join(s, "a/link"))
			for i := 0; i < 300; i++ { // enough for several batches
				write(t, filepath.Join(s, "a/many", string(rune('a'+i%26))+string(rune('a'+i/26))), "m", 0o644)
			}
			for _, d := range []string{"a/b/c/deep", "a/b/c", "a/b", "a", "z", "a/many", "."} {
				os.Chtimes(filepath.Join(s, d), old, old)
			}
			o := opts(10)
			take(t, w, o)
			c.change(s)
			for _, d := range []string{"a/b/c", "a/b", "a", "z"} {
				if fi, err := os.Lstat(filepath.Join(s, d)); err == nil && fi.IsDir() {
					os.Chtimes(filepath.Join(s, d), old, old) // folder mtimes alone would show every change
				}
			}
			os.Chtimes(s, old, old)
			r := take(t, w, o)
			if got := r.ID != ""; got != c.changed {
				var ls []string
				for _, ch := range r.Changes {
					ls = append(ls, ch.Line())
				}
				t.Fatalf("take made a snapshot: %v, want %v (changes %q)", got, c.changed, ls)
			}
		})
	}
}

// The scan itself (not only the take after it) finds nothing changed in an
// unchanged store of several folders and batches, and something changed
// after one edit deep inside it.
func TestScanAloneAnswers(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	for i := 0; i < 700; i++ {
		write(t, filepath.Join(w.Store(), "d"+string(rune('a'+i%3)), "f"+string(rune('a'+i%26))+string(rune('a'+i/26))), "x", 0o644)
	}
	a := take(t, w, opts(10))
	scan := func() bool {
		t.Helper()
		s, err := open(t.Context(), w, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer s.close()
		m, err := s.manifest(a.ID)
		if err != nil {
			t.Fatal(err)
		}
		roots, done, err := s.roots()
		defer done()
		if err != nil {
			t.Fatal(err)
		}
		changed, err := s.scan(roots, index(m.Entries), nil, a.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		return changed
	}
	if scan() {
		t.Fatal("scan of an unchanged store says changed")
	}
	os.Chmod(filepath.Join(w.Store(), "db", "fzm"), 0o600)
	if !scan() {
		t.Fatal("scan misses a chmod")
	}
}
