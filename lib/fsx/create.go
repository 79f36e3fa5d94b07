package fsx

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteNew atomically and durably creates path with data, and never replaces
// an existing file: the data is written and fsynced beside it, then
// hard-linked into place (link(2) fails if path exists, where rename would
// overwrite), and the folder fsynced. An existing path is an error that
// wraps fs.ErrExist.
func WriteNew(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".new-*")
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err == nil {
		err = tmp.Chmod(perm)
		if err == nil {
			err = tmp.Sync()
		}
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("create %s: %w", path, err)
		}
	} else {
		tmp.Close()
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	os.Remove(tmp.Name())
	return SyncDir(dir)
}
