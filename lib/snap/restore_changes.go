package snap

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// A restore's own change list.
//
// What a restore changes belongs to the restore, not to the next run
// (docs/store.md): the first take after it compares the restored trees
// with the snapshot they came from (record.go), so the next run's list
// leaves the restore out, and the restore keeps its own list with the
// pre-restore snapshot it took (its undo, one per restore):
// restore-changes.txt in that snapshot's folder, in the change-list
// format, written atomically once the swaps are done and listing the
// trees actually swapped in (empty when the restore failed before its
// swap: it changed nothing). It is deleted with its snapshot and
// scrubbed by forget like changes.txt. A pre-restore snapshot without one
// is one whose restore was killed between that snapshot and the end of
// its swaps (or taken by an older roster).

// writeRestoreChanges keeps, with pre-restore snapshot pre, the changes
// of cs that lie in the swapped trees.
func (s *session) writeRestoreChanges(pre string, cs []Change, swapped []restoreTree) error {
	var kept []Change
	for i := range cs {
		for _, t := range swapped {
			if inTree(cs[i].Path, t.path) {
				kept = append(kept, cs[i])
				break
			}
		}
	}
	fd, err := openDirAt(s.snaps, pre)
	if err != nil {
		return fmt.Errorf("keep the restore's change list: %w", err)
	}
	defer unix.Close(fd)
	if err := replaceAt(fd, home.SnapRestoreChanges, ChangeList(kept)); err != nil {
		return fmt.Errorf("keep the restore's change list in snapshot %s: %w", pre, err)
	}
	return nil
}

// ChangeFile is a snapshot's change list as written (change-list lines):
// what changed since the snapshot before it, or, with restore, what the
// restore that took it (a pre-restore snapshot) changed. It takes no lock:
// both files are written whole and renamed into place.
func ChangeFile(ctx context.Context, w home.Worker, prefix string, restore bool) (id string, data []byte, err error) {
	s, err := open(ctx, w, noLock)
	if err != nil {
		return "", nil, err
	}
	defer s.close()
	if id, err = s.resolve(prefix); err != nil {
		return "", nil, err
	}
	name := home.SnapChanges
	if restore {
		m, err := s.manifest(id)
		if err != nil {
			return id, nil, err
		}
		if m.Header.Label != LabelPreRestore {
			return id, nil, errs.WithHint(errs.New(errs.ErrNotFound, fmt.Sprintf("snapshot %s is not a pre-restore snapshot: no restore took it", id)),
				"`roster-snap ls "+w.Name+"` marks the pre-restore snapshots in LABEL")
		}
		name = home.SnapRestoreChanges
	}
	data, err = readFileAt(s.snaps, id, name)
	if errors.Is(err, unix.ENOENT) {
		if restore {
			return id, nil, errs.WithHint(errs.New(errs.ErrNotFound, fmt.Sprintf("snapshot %s keeps no change list of its restore: the restore was killed before its swap was done (or an older roster took it)", id)),
				"`roster-snap diff "+w.Name+" "+id+"` lists what differs between it and the live store")
		}
		return id, nil, errs.New(errs.ErrRefused, fmt.Sprintf("snapshot %s has no %s", id, home.SnapChanges))
	}
	if err != nil {
		return id, nil, errs.New(errs.ErrRefused, fmt.Sprintf("snapshot %s: read %s: %v", id, name, err))
	}
	return id, data, nil
}
