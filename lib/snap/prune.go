package snap

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// prune keeps the newest keep complete snapshots. Neither counted nor
// pruned: a pinned snapshot (Pin), a pre-restore snapshot younger than
// opt.UndoDays (any age with 0: until removed by hand), and a pre-restore
// snapshot newer than every ordinary one; the newest snapshot is never
// pruned. Victims are renamed into .trash/ first, then deleted.
func (s *session) prune(keep int, opt *Options) ([]string, error) {
	ids, err := s.ids()
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	pinned, err := s.pinned()
	if err != nil {
		return nil, err
	}
	newestOrdinary := ""
	labels := make([]string, len(ids))
	for i, id := range ids {
		h, err := s.checkShape(id)
		if err != nil {
			// Keeping "the newest N" is only sound when every snapshot can be
			// read: an unreadable one could be counted as a restore point
			// while the good ones go. Refuse, delete nothing.
			return nil, errs.WithHint(fmt.Errorf("snapshot %s: its manifest cannot be read (%v); nothing pruned: %w", id, err, errs.ErrRefused),
				"look at "+home.SnapManifest+" of that snapshot; move the snapshot out of "+home.SnapshotsDir+"/ once it is understood")
		}
		labels[i] = h.Label
		if labels[i] != LabelPreRestore {
			newestOrdinary = id
		}
	}
	var counted []string
	for i, id := range ids {
		if pinned[id] || labels[i] == LabelPreRestore && (id > newestOrdinary || undoKept(id, opt)) {
			continue
		}
		counted = append(counted, id)
	}
	if keep < 0 {
		keep = 0
	}
	if len(counted) <= keep {
		return nil, nil
	}
	victims := counted[:len(counted)-keep]
	if len(victims) > 0 && victims[len(victims)-1] == ids[len(ids)-1] {
		victims = victims[:len(victims)-1] // never the newest
	}
	if len(victims) == 0 {
		return nil, nil
	}
	trash, err := s.trash()
	if err != nil {
		return nil, err
	}
	defer unix.Close(trash)
	for _, v := range victims {
		if err := unix.Renameat(s.snaps, v, trash, v); err != nil {
			return nil, fmt.Errorf("move snapshot %s to %s: %w", v, home.SnapTrash, err)
		}
	}
	if err := unix.Fsync(s.snaps); err != nil {
		return nil, err
	}
	for _, v := range victims {
		if err := removeAt(trash, v); err != nil {
			return victims, fmt.Errorf("delete pruned snapshot %s: %w", v, err)
		}
	}
	return victims, nil
}

// undoKept tells whether pre-restore snapshot id is still inside
// store.undo_days (0: always).
func undoKept(id string, opt *Options) bool {
	if opt.UndoDays <= 0 {
		return true
	}
	at, err := home.SnapshotTime(id)
	return err != nil || opt.now().Sub(at) < time.Duration(opt.UndoDays)*24*time.Hour
}

func (s *session) trash() (int, error) {
	if err := unix.Mkdirat(s.snaps, home.SnapTrash, 0o700); err != nil && err != unix.EEXIST {
		return -1, fmt.Errorf("make %s: %w", home.SnapTrash, err)
	}
	return openDirAt(s.snaps, home.SnapTrash)
}

// Prune keeps the newest keep snapshots of w (docs/store.md step 6), under the
// store lock.
func Prune(ctx context.Context, w home.Worker, keep int, opt Options) ([]string, error) {
	s, err := open(ctx, w, opt.Wait)
	if err != nil {
		return nil, err
	}
	defer s.close()
	if err := s.cleanup(); err != nil {
		return nil, err
	}
	return s.prune(keep, &opt)
}

// checkShape reads snapshot id's header and checks its manifest's shape
// without parsing every entry: it ends with a newline, holds exactly the
// header's count of entry lines, and each is one JSON object. Prune runs
// it on every snapshot after each take, so it maps the file (one open, no
// copy) and finds line ends with IndexByte; take, diff and restore parse
// the manifests they use whole.
func (s *session) checkShape(id string) (Header, error) {
	fd, err := openDirAt(s.snaps, id)
	if err != nil {
		return Header{}, err
	}
	mfd, err := openRead(fd, home.SnapManifest)
	unix.Close(fd)
	if err != nil {
		return Header{}, err
	}
	defer unix.Close(mfd)
	var st unix.Stat_t
	if err := unix.Fstat(mfd, &st); err != nil {
		return Header{}, err
	}
	if st.Size == 0 {
		return Header{}, fmt.Errorf("%w: empty", ErrBadManifest)
	}
	data, err := unix.Mmap(mfd, 0, int(st.Size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return Header{}, err
	}
	defer unix.Munmap(data)
	return shapeOf(data)
}

// shapeOf is checkShape on a manifest's bytes.
func shapeOf(data []byte) (Header, error) {
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 {
		return Header{}, fmt.Errorf("%w: no header line", ErrBadManifest)
	}
	h, err := ParseHeader(data[:nl])
	if err != nil {
		return h, err
	}
	lines := 0
	for rest := data[nl+1:]; len(rest) > 0; lines++ {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return h, fmt.Errorf("%w: torn last line", ErrBadManifest)
		}
		if i < 2 || rest[0] != '{' || rest[i-1] != '}' {
			return h, fmt.Errorf("%w: line %d is not a JSON object", ErrBadManifest, lines+2)
		}
		rest = rest[i+1:]
	}
	if lines != h.Entries {
		return h, fmt.Errorf("%w: %d entry lines, the header says %d", ErrBadManifest, lines, h.Entries)
	}
	return h, nil
}
