package snap

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/home"
)

// ForgetResult is what ForgetChannel removed (or, in a dry run, would).
type ForgetResult struct {
	Store     bool // the live channel store (or a half-removed one) was there
	Snapshots int  // snapshots that held the channel's subtree
	Entries   int  // manifest entries removed from them
}

// forgetTrash is where the live channel store goes first (one rename takes
// it out of every box's and take's sight), in the worker's folder. One
// forget runs at a time per worker (the caller's intent record), so one
// name is enough.
const forgetTrash = ".forget-channel-store"

// manifestTmp is the temporary manifest a forget writes beside the one it
// replaces; a killed forget's is removed by the next.
const manifestTmp = home.SnapManifest + ".forget-tmp"

// ForgetChannel removes channel store enc (a channel's encoded name) from
// the live tree and from every snapshot of w, under w's store lock
// (docs/store.md, "Forgetting a conversation"). For each snapshot holding
// it, the manifest is rewritten without the subtree's entries (atomically:
// a temporary file, fsync, rename), the change list without its lines
// (and a restore's, restore_changes.go), and then the subtree is deleted;
// a restore record naming it is dropped (it is a cache). Each step can be done again: a killed ForgetChannel is
// finished by the next call. Nothing else of any snapshot changes: its id,
// header (but the counts) and every other entry stay.
func ForgetChannel(ctx context.Context, w home.Worker, enc string, dry bool, opt Options) (*ForgetResult, error) {
	if _, err := home.DecodeChannel(enc); err != nil {
		return nil, err
	}
	wait := opt.Wait
	if dry {
		wait = noLock
	}
	s, err := open(ctx, w, wait)
	if err != nil {
		return nil, err
	}
	defer s.close()
	res := &ForgetResult{}
	tree := home.SnapChannelStoresDir + "/" + enc
	if !dry {
		// A half-removed store of a killed forget first.
		if err := removeAt(s.wdir, forgetTrash); err != nil {
			return nil, fmt.Errorf("remove %s: %w", forgetTrash, err)
		}
	}
	if cs, err := openDirAt(s.wdir, home.SnapChannelStoresDir); err == nil {
		var st unix.Stat_t
		if unix.Fstatat(cs, enc, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			res.Store = true
			if !dry {
				err := unix.Renameat(cs, enc, s.wdir, forgetTrash)
				if err == nil {
					err = unix.Fsync(cs)
				}
				if err == nil {
					err = unix.Fsync(s.wdir)
				}
				if err == nil {
					err = removeAt(s.wdir, forgetTrash)
				}
				if err != nil {
					unix.Close(cs)
					return nil, fmt.Errorf("remove %s: %w", w.ChannelStores()+"/"+enc, err)
				}
			}
		}
		unix.Close(cs)
	} else if err != unix.ENOENT {
		return nil, fmt.Errorf("open %s: %w", w.ChannelStores(), err)
	}
	ids, err := s.ids()
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		n, had, err := s.forgetIn(id, tree, enc, dry)
		if err != nil {
			return res, err
		}
		if had {
			res.Snapshots++
			res.Entries += n
		}
	}
	if rm := s.readRecordManifest(); rm != nil && !dry && recordNames(rm, tree) {
		if err := s.dropRecord(); err != nil {
			return res, err
		}
	}
	return res, nil
}

// recordNames reports whether restore record rm names tree: a file in it,
// or its scope (the tree, or a path in it).
func recordNames(rm *Manifest, tree string) bool {
	for _, p := range rm.Header.Scope {
		if inTree(p, tree) {
			return true
		}
	}
	for i := range rm.Entries {
		if inTree(rm.Entries[i].Path, tree) {
			return true
		}
	}
	return false
}

// inTree reports whether manifest path p is tree or below it.
func inTree(p, tree string) bool {
	return p == tree || strings.HasPrefix(p, tree+"/")
}

// forgetIn removes tree from snapshot id: the manifest's entries (how
// many it had is returned), the change list's lines, then the folder. had
// says whether anything of it was there.
func (s *session) forgetIn(id, tree, enc string, dry bool) (int, bool, error) {
	sfd, err := openDirAt(s.snaps, id)
	if err != nil {
		return 0, false, fmt.Errorf("open snapshot %s: %w", id, err)
	}
	defer unix.Close(sfd)
	if !dry {
		unix.Unlinkat(sfd, manifestTmp, 0)
	}
	m, err := s.manifest(id)
	if err != nil {
		return 0, false, err
	}
	kept := m.Entries[:0:0]
	for i := range m.Entries {
		if !inTree(m.Entries[i].Path, tree) {
			kept = append(kept, m.Entries[i])
		}
	}
	removed := len(m.Entries) - len(kept)
	var st unix.Stat_t
	folder := unix.Fstatat(sfd, tree, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
	changes, _ := readFileAt(sfd, home.SnapChanges)
	scrubbed := DropTreeLines(changes, tree)
	rchanges, _ := readFileAt(sfd, home.SnapRestoreChanges) // a pre-restore snapshot's restore (restore_changes.go)
	rscrubbed := DropTreeLines(rchanges, tree)
	had := removed > 0 || folder || len(scrubbed) != len(changes) || len(rscrubbed) != len(rchanges)
	if dry || !had {
		return removed, had, nil
	}
	if removed > 0 {
		m.Entries = kept
		m.Header = recount(m.Header, kept)
		if err := replaceAt(sfd, home.SnapManifest, m.Encode()); err != nil {
			return 0, true, fmt.Errorf("snapshot %s: rewrite manifest: %w", id, err)
		}
	}
	if len(scrubbed) != len(changes) {
		if err := replaceAt(sfd, home.SnapChanges, scrubbed); err != nil {
			return 0, true, fmt.Errorf("snapshot %s: rewrite change list: %w", id, err)
		}
	}
	if len(rscrubbed) != len(rchanges) {
		if err := replaceAt(sfd, home.SnapRestoreChanges, rscrubbed); err != nil {
			return 0, true, fmt.Errorf("snapshot %s: rewrite the restore's change list: %w", id, err)
		}
	}
	if folder {
		cs, err := openDirAt(sfd, home.SnapChannelStoresDir)
		if err != nil {
			return 0, true, fmt.Errorf("snapshot %s: %w", id, err)
		}
		err = removeAt(cs, enc)
		if err == nil {
			err = unix.Fsync(cs)
		}
		unix.Close(cs)
		if err != nil {
			return 0, true, fmt.Errorf("snapshot %s: remove %s: %w", id, tree, err)
		}
	}
	return removed, true, nil
}

// recount is h with its counts made those of entries: a take counts its
// walk with it, and forget the manifest it rewrites.
func recount(h Header, entries []Entry) Header {
	h.Entries, h.Files, h.Bytes, h.Skipped, h.Unstable = len(entries), 0, 0, 0, 0
	seen := map[int]bool{}
	for i := range entries {
		e := &entries[i]
		switch {
		case e.Type == TypeFile:
			h.Files++
			if e.Group == 0 || !seen[e.Group] {
				h.Bytes += e.Size
				seen[e.Group] = e.Group != 0
			}
		case special(e.Type):
			h.Skipped++
		}
		if e.Unstable {
			h.Unstable++
		}
	}
	return h
}

// replaceAt replaces name in dir with data, atomically and durably: a
// temporary file (mode 0600), fsync, rename over, fsync dir.
func replaceAt(dir int, name string, data []byte) error {
	tmp := name + ".forget-tmp"
	unix.Unlinkat(dir, tmp, 0)
	err := writeNew(dir, tmp, data) // fsynced as written
	if err == nil {
		err = unix.Renameat(dir, tmp, dir, name)
	}
	if err != nil {
		unix.Unlinkat(dir, tmp, 0)
		return err
	}
	return unix.Fsync(dir)
}

// DropTreeLines returns a change list (a snapshot's changes.txt, a run's
// store-changes.txt) without the lines about tree ("channel-stores/ENC")
// or anything below it; data itself when there are none.
func DropTreeLines(data []byte, tree string) []byte {
	esc := []byte(EscapeName(tree))
	if !bytes.Contains(data, esc) {
		return data
	}
	var out []byte
	for rest := data; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = nil
		}
		if !namesTree(line, esc) {
			out = append(out, line...)
		}
	}
	return out
}

// namesTree reports whether a change-list line names the escaped tree or
// a path below it: the name starts after a space and is followed by '/',
// ' ' (a symlink's or hardlink's arrow, a skip's reason), or the line end.
func namesTree(line, esc []byte) bool {
	for off := 0; ; {
		i := bytes.Index(line[off:], esc)
		if i < 0 {
			return false
		}
		at := off + i
		end := at + len(esc)
		if at > 0 && line[at-1] == ' ' && (end == len(line) || line[end] == '/' || line[end] == ' ' || line[end] == '\n') {
			return true
		}
		off = at + 1
	}
}
