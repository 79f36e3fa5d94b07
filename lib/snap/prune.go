package snap

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/home"
)

// Why a snapshot survives a rotation (retain); a snapshot may have
// several reasons.
const (
	keptNewest = 1 << iota // among the newest keep counted snapshots (the newest always)
	keptDaily              // the newest of one of the last Daily local days with a counted snapshot
	keptPinned             // roster-snap pin
	keptUndo               // pre-restore: inside store.undo_days, or newer than every ordinary one
)

// retain decides the rotation of snapshots ids (oldest first) with their
// labels and the pinned set: the reasons each is kept, 0 for a victim.
// Neither counted nor pruned: a pinned snapshot, a pre-restore snapshot
// younger than opt.UndoDays (any age with 0: until removed by hand), and a
// pre-restore snapshot newer than every ordinary one. Of the rest, the
// newest keep are kept, and the newest of each of the last opt.Daily local
// days (opt.Zone's) that have one, counted as restic's and borg's
// --keep-daily count them: days without a snapshot are not counted, so a
// burst of runs after a quiet week still keeps the week before it. The
// newest snapshot is never pruned.
func retain(ids, labels []string, pinned map[string]bool, keep int, opt *Options) []int {
	why := make([]int, len(ids))
	newestOrdinary := ""
	for i, id := range ids {
		if labels[i] != LabelPreRestore {
			newestOrdinary = id
		}
	}
	zone := opt.Zone
	if zone == nil {
		zone = config.SystemZone()
	}
	counted, days := 0, 0
	lastDay := ""
	for i := len(ids) - 1; i >= 0; i-- {
		id := ids[i]
		if pinned[id] {
			why[i] |= keptPinned
		}
		if labels[i] == LabelPreRestore && (id > newestOrdinary || undoKept(id, opt)) {
			why[i] |= keptUndo
		}
		if why[i] != 0 {
			continue
		}
		if counted < keep || i == len(ids)-1 {
			why[i] |= keptNewest
		}
		counted++
		if day := localDay(id, zone); day != lastDay {
			lastDay = day
			if days < opt.Daily {
				why[i] |= keptDaily
			}
			days++
		}
	}
	return why
}

// localDay is the local date (in zone) of snapshot id's time; an id that
// is not a time is a day of its own.
func localDay(id string, zone *time.Location) string {
	at, err := home.SnapshotTime(id)
	if err != nil {
		return id
	}
	return at.In(zone).Format("2006-01-02")
}

// prune applies retain to the complete snapshots: the victims are renamed
// into .trash/ first, then deleted.
func (s *session) prune(keep int, opt *Options) ([]string, error) {
	ids, err := s.ids()
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	pinned, err := s.pinned()
	if err != nil {
		return nil, err
	}
	labels, err := s.labels(ids)
	if err != nil {
		return nil, err
	}
	if keep < 0 {
		keep = 0
	}
	var victims []string
	for i, why := range retain(ids, labels, pinned, keep, opt) {
		if why == 0 {
			victims = append(victims, ids[i])
		}
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

// Prune keeps the newest keep snapshots of w (docs/store.md step 6) and
// the others retain keeps (opt.Daily, pinned, pre-restore), under the
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
// it after each take on every snapshot whose manifest changed since it
// last did (checked.go), so it maps the file (one open, no copy) and
// finds line ends with IndexByte; take, diff and restore parse the
// manifests they use whole. st (nil: not wanted) gets the stat of the
// file checked.
func (s *session) checkShape(id string, st *unix.Stat_t) (Header, error) {
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
	if st == nil {
		st = new(unix.Stat_t)
	}
	if err := unix.Fstat(mfd, st); err != nil {
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
