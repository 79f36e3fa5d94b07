package snap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// What prune knows of the manifests it has found sound (docs/store.md,
// "The manifest"): store-snapshots/.checked.jsonl, one line per snapshot,
// the manifest's inode, size, mtime and ctime when its shape was checked,
// and its label. Prune checks the shape of every manifest after every
// take; a manifest whose stat is still the recorded one is not read
// again (any write through the filesystem moves its mtime and ctime,
// forget's rewrite its inode). The file is a cache: without it every
// manifest is checked and it is written again; one that cannot be read is
// refused, never overwritten.

// checkedManifest is one line of .checked.jsonl.
type checkedManifest struct {
	ID    string `json:"id"`
	Ino   uint64 `json:"ino"`
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime"`
	Ctime int64  `json:"ctime"`
	Label string `json:"label"`
}

// checkedOf records manifest st of snapshot id, labelled label.
func checkedOf(id, label string, st *unix.Stat_t) checkedManifest {
	return checkedManifest{ID: id, Ino: st.Ino, Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(), Label: label}
}

// parseChecked decodes .checked.jsonl: every line one record of a
// snapshot id, no id twice.
func parseChecked(data []byte) (map[string]checkedManifest, error) {
	known := map[string]checkedManifest{}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		return nil, errors.New("torn last line")
	}
	for n := 1; len(data) > 0; n++ {
		i := bytes.IndexByte(data, '\n')
		var c checkedManifest
		if err := json.Unmarshal(data[:i], &c); err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		if !home.IsSnapshotID(c.ID) {
			return nil, fmt.Errorf("line %d: %q is not a snapshot id", n, c.ID)
		}
		if _, dup := known[c.ID]; dup {
			return nil, fmt.Errorf("line %d: %s listed twice", n, c.ID)
		}
		known[c.ID] = c
		data = data[i+1:]
	}
	return known, nil
}

// readChecked reads .checked.jsonl (empty when there is none); one that
// cannot be read is a refusal.
func (s *session) readChecked() (map[string]checkedManifest, error) {
	data, err := readFileAt(s.snaps, home.SnapChecked)
	if errors.Is(err, unix.ENOENT) {
		return map[string]checkedManifest{}, nil
	}
	if err == nil {
		var known map[string]checkedManifest
		if known, err = parseChecked(data); err == nil {
			return known, nil
		}
	}
	return nil, errs.WithHint(fmt.Errorf("%s/%s: cannot be read (%v); nothing pruned: %w", home.SnapshotsDir, home.SnapChecked, err, errs.ErrRefused),
		"it only records which manifests were found sound: delete it, and the next take or prune checks every manifest again")
}

// labels gives the label of each snapshot ids names, having checked the
// shape of each manifest not found unchanged in .checked.jsonl, and
// records what it checked there. A manifest that cannot be read is a
// refusal: keeping "the newest N" is only sound when every snapshot can
// be read (an unreadable one could be counted as a restore point while
// the good ones go).
func (s *session) labels(ids []string) ([]string, error) {
	known, err := s.readChecked()
	if err != nil {
		return nil, err
	}
	labels := make([]string, len(ids))
	records := make([]checkedManifest, len(ids))
	changed := len(known) != len(ids)
	for i, id := range ids {
		c, ok := known[id]
		var st unix.Stat_t
		if ok && s.manifestStat(id, &st) == nil && checkedOf(id, c.Label, &st) == c {
			labels[i], records[i] = c.Label, c
			continue
		}
		h, err := s.checkShape(id, &st)
		if err != nil {
			return nil, errs.WithHint(fmt.Errorf("snapshot %s: its manifest cannot be read (%v); nothing pruned: %w", id, err, errs.ErrRefused),
				"look at "+home.SnapManifest+" of that snapshot; move the snapshot out of "+home.SnapshotsDir+"/ once it is understood")
		}
		labels[i], records[i] = h.Label, checkedOf(id, h.Label, &st)
		changed = true
	}
	if changed {
		// Best effort: without the record the next prune checks again.
		replaceAt(s.snaps, home.SnapChecked, encodeChecked(records))
	}
	return labels, nil
}

func encodeChecked(cs []checkedManifest) []byte {
	sort.Slice(cs, func(i, j int) bool { return cs[i].ID < cs[j].ID })
	var b []byte
	for _, c := range cs {
		line, _ := json.Marshal(c)
		b = append(append(b, line...), '\n')
	}
	return b
}

// manifestStat stats snapshot id's manifest, never through a symlink.
func (s *session) manifestStat(id string, st *unix.Stat_t) error {
	fd, err := openDirAt(s.snaps, id)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Fstatat(fd, home.SnapManifest, st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return unix.EINVAL
	}
	return nil
}
