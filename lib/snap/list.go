package snap

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/home"
)

// Info describes one complete snapshot (roster-snap ls).
type Info struct {
	ID       string    `json:"id"`
	Label    string    `json:"label"`
	TakenAt  time.Time `json:"taken_at"`
	Files    int       `json:"files"`
	Entries  int       `json:"entries"`      // inodes of the stores: files, folders, links (what store.max counts as inodes)
	Bytes    int64     `json:"bytes"`        // apparent size (st_size) of the stores' regular files, each inode once: a sparse file counts whole
	Shared   int64     `json:"shared_bytes"` // disk space (st_blocks*512) of the inodes also linked from another snapshot
	Own      int64     `json:"own_bytes"`    // disk space (st_blocks*512) of the inodes only this snapshot links (files, folders, manifest): freed by deleting it
	Unstable int       `json:"unstable"`
	Skipped  int       `json:"skipped"`
	Pinned   bool      `json:"pinned"` // roster-snap pin: never rotated away
	// Daily: kept only as the newest snapshot of its local day (store.daily),
	// not as one of the newest store.snapshots, pinned or an undo.
	Daily bool `json:"daily"`
}

// List describes worker w's complete snapshots, newest first, each as
// the rotation under opt (Keep, Daily, Zone, UndoDays) would keep it. It
// takes no lock: snapshots are only ever renamed into place whole.
func List(ctx context.Context, w home.Worker, opt Options) ([]Info, error) {
	s, err := open(ctx, w, noLock)
	if err != nil {
		return nil, err
	}
	defer s.close()
	ids, err := s.ids()
	if err != nil {
		return nil, err
	}
	pinned, err := s.pinned()
	if err != nil {
		return nil, err
	}
	out := make([]Info, len(ids))
	labels := make([]string, len(ids))
	for i := len(ids) - 1; i >= 0; i-- {
		h, err := s.checkShape(ids[i], nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %v: %w", w.SnapshotManifest(ids[i]), err, ErrBadManifest)
		}
		labels[i] = h.Label
		in := Info{ID: ids[i], Label: h.Label, TakenAt: h.TakenAt, Files: h.Files, Entries: h.Entries, Unstable: h.Unstable, Skipped: h.Skipped, Pinned: pinned[ids[i]]}
		if err := s.usage(ids[i], &in); err != nil {
			return nil, err
		}
		out[len(ids)-1-i] = in
	}
	for i, why := range retain(ids, labels, pinned, opt.Keep, &opt) {
		out[len(ids)-1-i].Daily = why == keptDaily
	}
	return out, nil
}

// IDs lists worker w's complete snapshots, oldest first.
func IDs(w home.Worker) ([]string, error) {
	s, err := open(context.Background(), w, noLock)
	if err != nil {
		return nil, err
	}
	defer s.close()
	return s.ids()
}

// usage sizes a snapshot. Bytes is the apparent size of the regular
// files of its store and channel stores; Own and Shared are disk space
// (st_blocks*512, holes cost nothing) of every inode in the snapshot's
// folder, each counted once: an inode whose links are all inside the
// snapshot is its own (folders always are, as are the manifest and the
// change list), any other is shared with another snapshot.
func (s *session) usage(id string, in *Info) error {
	fd, err := openDirAt(s.snaps, id)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var top unix.Stat_t
	if err := unix.Fstat(fd, &top); err != nil {
		return fmt.Errorf("snapshot %s: %w", id, err)
	}
	in.Own += top.Blocks * 512
	type ino struct {
		nlink uint64
		names uint64
		disk  int64
	}
	seen := map[uint64]*ino{}
	buf := make([]byte, 32<<10)
	var walk func(dir int, depth int, store bool) error
	walk = func(dir int, depth int, store bool) error {
		names, err := readNames(dir, buf, nil)
		if err != nil {
			return err
		}
		for _, n := range names {
			inStore := store || (depth == 0 && (n == home.SnapStoreDir || n == home.SnapChannelStoresDir))
			var st unix.Stat_t
			if err := unix.Fstatat(dir, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return err
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
				in.Own += st.Blocks * 512 // a folder has one name
				sub, err := openDirAt(dir, n)
				if err != nil {
					return err
				}
				err = walk(sub, depth+1, inStore)
				unix.Close(sub)
				if err != nil {
					return err
				}
			default:
				i := seen[st.Ino]
				if i == nil {
					i = &ino{nlink: uint64(st.Nlink), disk: st.Blocks * 512}
					seen[st.Ino] = i
					if inStore && st.Mode&unix.S_IFMT == unix.S_IFREG {
						in.Bytes += st.Size
					}
				}
				i.names++
			}
		}
		return nil
	}
	if err := walk(fd, 0, false); err != nil {
		return fmt.Errorf("snapshot %s: %w", id, err)
	}
	for _, i := range seen {
		if i.names >= i.nlink {
			in.Own += i.disk
		} else {
			in.Shared += i.disk
		}
	}
	return nil
}

// Diff lists the changes from snapshot from to snapshot to (ids or unique
// prefixes). from "" is the newest snapshot; to "" is the live store and
// channel stores, walked without the lock (a look, not a record).
func Diff(ctx context.Context, w home.Worker, from, to string) ([]Change, error) {
	s, err := open(ctx, w, noLock)
	if err != nil {
		return nil, err
	}
	defer s.close()
	fromID, err := s.resolve(from)
	if err != nil {
		return nil, err
	}
	a, err := s.manifest(fromID)
	if err != nil {
		return nil, err
	}
	var cur []Entry
	if to != "" {
		toID, err := s.resolve(to)
		if err != nil {
			return nil, err
		}
		b, err := s.manifest(toID)
		if err != nil {
			return nil, err
		}
		cur = b.Entries
	} else {
		roots, closeRoots, err := s.roots()
		defer closeRoots()
		if err != nil {
			return nil, err
		}
		// With a restore record, files a restore put back are compared
		// by the snapshot inode they hold, not by their new ctime.
		byPath := index(a.Entries)
		wk := newWalker(nil, false)
		if wk.rec = s.readRecord(); wk.rec != nil {
			wk.prev = byPath
		}
		if err := s.walkRoots(wk, roots, fromID); err != nil {
			return nil, err
		}
		return compareTrees(a.Entries, byPath, wk.entries, false, true), nil
	}
	return compareTrees(a.Entries, index(a.Entries), cur, false, to == ""), nil
}

// Newest is the header of worker w's newest complete snapshot, nil when it
// has none: the figures of the last take (its files, bytes and entries,
// folders included), read from the manifest's first line only, so it costs
// the same however large the store. It takes no lock.
func Newest(ctx context.Context, w home.Worker) (*Header, error) {
	s, err := open(ctx, w, noLock)
	if err != nil {
		return nil, err
	}
	defer s.close()
	ids, err := s.ids()
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	id := ids[len(ids)-1]
	fd, err := openDirAt(s.snaps, id)
	if err != nil {
		return nil, err
	}
	mfd, err := openRead(fd, home.SnapManifest)
	unix.Close(fd)
	if err != nil {
		return nil, err
	}
	defer unix.Close(mfd)
	buf := make([]byte, 64<<10) // a header is a few hundred bytes
	n, err := unix.Pread(mfd, buf, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w.SnapshotManifest(id), err)
	}
	line, _, ok := bytes.Cut(buf[:n], []byte{'\n'})
	if !ok {
		return nil, fmt.Errorf("%s: %w: no header line", w.SnapshotManifest(id), ErrBadManifest)
	}
	h, err := ParseHeader(line)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w.SnapshotManifest(id), err)
	}
	return &h, nil
}
