package fsx

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fsnotify/fsnotify"
)

// The temporary file is made beside the target, never in $TMPDIR (even one
// on the same filesystem, which renameio would otherwise use).
func TestWriteFileMakesItsTemporaryFileBesideTheTarget(t *testing.T) {
	base := t.TempDir()
	tmp := filepath.Join(base, "tmp")
	dst := filepath.Join(base, "data")
	for _, d := range []string{tmp, dst} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("TMPDIR", tmp)
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Add(tmp); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(dst, "f.json"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A marker made after the write: inotify reports a watch's events in
	// order, so anything before it came from WriteFile.
	marker := filepath.Join(tmp, "marker")
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev := <-w.Events:
			if ev.Name == marker {
				return
			}
			t.Fatalf("WriteFile touched $TMPDIR: %v", ev)
		case err := <-w.Errors:
			t.Fatal(err)
		}
	}
}
