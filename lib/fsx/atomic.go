package fsx

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"
)

// WriteFile atomically and durably replaces path with data: temporary file
// beside it, fsync, rename over, fsync the folder (renameio does not). The
// new file's mode is perm exactly: neither the umask nor the old file's
// mode applies (renameio.WriteFile would keep the old mode).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	// WithTempDir: without it renameio writes the temporary file in
	// $TMPDIR whenever that is on the same filesystem, after probing
	// with two extra files.
	t, err := renameio.NewPendingFile(path, renameio.WithStaticPermissions(perm), renameio.WithTempDir(filepath.Dir(path)))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer t.Cleanup()
	if _, err := t.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := t.CloseAtomicallyReplace(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir fsyncs a folder so that a rename or create in it is durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync folder %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync folder %s: %w", dir, err)
	}
	return nil
}

// MkdirDurable creates dir (one level) with perm exactly (umask ignored) and
// fsyncs its parent. An existing folder is left as it is.
func MkdirDurable(dir string, perm os.FileMode) error {
	if err := os.Mkdir(dir, perm); err != nil {
		if os.IsExist(err) {
			return nil
		}
		return err
	}
	if err := os.Chmod(dir, perm); err != nil { // root-made folder, umask undone
		return err
	}
	return SyncDir(filepath.Dir(dir))
}
