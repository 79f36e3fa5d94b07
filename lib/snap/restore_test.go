package snap

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
)

// fillStore makes a store with owners, modes, times, nesting, symlinks,
// a hardlink, an empty folder and awkward names.
func fillStore(t *testing.T, s string, variant string) {
	t.Helper()
	write(t, filepath.Join(s, "notes.md"), "notes "+variant, 0o644)
	write(t, filepath.Join(s, "secret"), "s3cr3t", 0o600)
	write(t, filepath.Join(s, "repo/objects/ab/cdef"), "blob "+variant, 0o444)
	write(t, filepath.Join(s, "repo/HEAD"), "ref: main", 0o664)
	write(t, filepath.Join(s, "bin/tool"), "#!/bin/sh", 0o4755)
	write(t, filepath.Join(s, "new\nline"), "nl", 0o644)
	write(t, filepath.Join(s, "\xff\xfebin"), "raw", 0o644)
	os.MkdirAll(filepath.Join(s, "empty"), 0o750)
	os.Symlink("../notes.md", filepath.Join(s, "repo/link"))
	os.Symlink("/etc/passwd", filepath.Join(s, "etc"))
	os.Link(filepath.Join(s, "notes.md"), filepath.Join(s, "repo/notes-link"))
	os.Chown(filepath.Join(s, "secret"), 200001, 200001)
	os.Lchown(filepath.Join(s, "repo/link"), 200001, 200002)
	os.Chown(filepath.Join(s, "repo"), 200001, 200001)
	os.Chmod(filepath.Join(s, "bin/tool"), 0o4755)
	when := time.Date(2024, 3, 1, 12, 0, 0, 123456789, time.UTC)
	for _, p := range []string{"notes.md", "repo/objects/ab/cdef", "empty", "repo/objects/ab", "repo/objects"} {
		os.Chtimes(filepath.Join(s, p), when, when)
	}
}

func rsyncDiff(t *testing.T, a, b string) string {
	t.Helper()
	if _, err := exec.LookPath("rsync"); err != nil {
		return ""
	}
	out, err := exec.Command("rsync", "-anci", "--delete", a+"/", b+"/").CombinedOutput()
	if err != nil {
		t.Fatalf("rsync: %v\n%s", err, out)
	}
	return string(out)
}

// Restore A, then restore the pre-restore snapshot: the store is byte,
// mode, owner and mtime identical to what it was.
func TestRestoreUndoIsIdentical(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	s := w.Store()
	fillStore(t, s, "A")
	o := opts(10)
	a := take(t, w, o)
	stateA := treeState(t, s)
	// Move on to state B.
	write(t, filepath.Join(s, "notes.md"), "notes B, longer", 0o640)
	os.RemoveAll(filepath.Join(s, "repo/objects"))
	write(t, filepath.Join(s, "fresh/file"), "B only", 0o600)
	os.Chmod(filepath.Join(s, "secret"), 0o640)
	os.Remove(filepath.Join(s, "etc"))
	os.Symlink("/etc/hostname", filepath.Join(s, "etc"))
	stateB := treeState(t, s)
	ref := filepath.Join(t.TempDir(), "ref")
	if out, err := exec.Command("cp", "-a", s, ref).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v %s", err, out)
	}
	dry, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID, DryRun: true})
	if err != nil || len(dry.Changes) == 0 || dry.PreRestore != "" {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	if treeState(t, s) != stateB {
		t.Fatal("dry run changed the store")
	}
	r, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID[:10]})
	if err != nil {
		t.Fatal(err)
	}
	if got := treeState(t, s); got != stateA {
		t.Fatalf("restored store:\n%s\nwant\n%s", got, stateA)
	}
	if fi, err := os.Lstat(w.StoreLocksMount()); err != nil || !fi.IsDir() {
		t.Fatal("restored store lacks its .locks mount point")
	}
	if h := readManifest(t, w.SnapshotManifest(r.PreRestore)).Header; h.Label != LabelPreRestore {
		t.Fatalf("pre-restore snapshot labelled %q", h.Label)
	}
	if _, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: r.PreRestore}); err != nil {
		t.Fatal(err)
	}
	if got := treeState(t, s); got != stateB {
		t.Fatalf("undone store:\n%s\nwant\n%s", got, stateB)
	}
	if out := rsyncDiff(t, ref, s); out != "" {
		t.Fatalf("rsync -anci sees differences after undo:\n%s", out)
	}
	// No staging left behind.
	ents, _ := os.ReadDir(w.Dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), home.RestorePrefix) {
			t.Errorf("staging left: %s", e.Name())
		}
	}
}

// A live box refuses a restore (exit 13); --force keeps the old tree in
// .trash/ until no box is live, then the next take deletes it.
func TestRestoreRefusedWhileBoxLiveForceKeepsOldTree(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	write(t, filepath.Join(w.Store(), "f"), "one", 0o644)
	write(t, filepath.Join(w.Store(), "u"), "untouched", 0o644)
	o := opts(10)
	a := take(t, w, o)
	write(t, filepath.Join(w.Store(), "f"), "two", 0o644)
	run := home.NewRunID(time.Now())
	os.MkdirAll(w.Run(run), 0o755)
	b, err := runs.SelfBoxInfo(w.Name, run, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := runs.WriteBoxInfo(w.Run(run), b); err != nil {
		t.Fatal(err)
	}
	_, err = Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID})
	if !errors.Is(err, errs.ErrConflict) {
		t.Fatalf("restore under a live box = %v, want conflict", err)
	}
	if string(mustRead(t, filepath.Join(w.Store(), "f"))) != "two" {
		t.Fatal("refused restore changed the store")
	}
	r, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if string(mustRead(t, filepath.Join(w.Store(), "f"))) != "one" || len(r.Trashed) != 1 {
		t.Fatalf("forced restore: %+v", r)
	}
	old := filepath.Join(w.Snapshots(), ".trash", r.Trashed[0])
	if string(mustRead(t, filepath.Join(old, "f"))) != "two" {
		t.Fatal("old tree not kept in .trash")
	}
	// The live box keeps writing into the old tree: not even an untouched
	// file of it may be reused by the restored one.
	if inode(t, filepath.Join(old, "u")) == inode(t, filepath.Join(w.Store(), "u")) {
		t.Fatal("forced restore under a live box linked a live inode of the old tree")
	}
	// A second forced restore of the same snapshot while the box is still
	// live: its old tree goes to .trash/ beside the first, never over it.
	write(t, filepath.Join(w.Store(), "f"), "three", 0o644)
	r2, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID, Force: true})
	if err != nil {
		t.Fatalf("second forced restore: %v", err)
	}
	if len(r2.Trashed) != 1 || r2.Trashed[0] == r.Trashed[0] {
		t.Fatalf("second forced restore trashed %v (first %v)", r2.Trashed, r.Trashed)
	}
	old2 := filepath.Join(w.Snapshots(), ".trash", r2.Trashed[0])
	if string(mustRead(t, filepath.Join(old2, "f"))) != "three" || string(mustRead(t, filepath.Join(old, "f"))) != "two" {
		t.Fatal("the old trees in .trash/ are not the two displaced stores")
	}
	write(t, filepath.Join(w.Store(), "g"), "x", 0o644)
	take(t, w, o)
	if _, err := os.Stat(old); err != nil {
		t.Fatal("old tree deleted while the box is live")
	}
	os.Remove(home.BoxJSON(w.Run(run)))
	take(t, w, o) // unchanged, but cleans up
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("old tree not deleted once no box is live")
	}
}

// A pre-restore snapshot is not counted against store.snapshots until the
// next ordinary snapshot.
func TestPreRestoreNotCountedUntilNextOrdinary(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	o := opts(2)
	var ids []string
	for i := 0; i < 2; i++ {
		write(t, filepath.Join(w.Store(), "f"), strings.Repeat("v", i+1), 0o644)
		ids = append(ids, take(t, w, o).ID)
	}
	write(t, filepath.Join(w.Store(), "f"), "current", 0o644)
	r, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: ids[0]})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := IDs(w)
	if strings.Join(got, " ") != strings.Join(append(ids, r.PreRestore), " ") {
		t.Fatalf("after restore: %v", got)
	}
	// Past store.undo_days, the pre-restore snapshot is one of the count.
	o.UndoDays = 30
	o.Now = func() time.Time { return time.Now().Add(31 * 24 * time.Hour) }
	write(t, filepath.Join(w.Store(), "f"), "next", 0o644)
	c := take(t, w, o)
	got, _ = IDs(w)
	if strings.Join(got, " ") != r.PreRestore+" "+c.ID {
		t.Fatalf("after the next ordinary snapshot: %v, want [%s %s]", got, r.PreRestore, c.ID)
	}
}

// TestPreRestoreKeptForUndoDaysAndPinnedNeverRotated: within
// store.undo_days (or with 0, until removed by hand) a pre-restore
// snapshot is neither counted nor pruned; a pinned one never is.
func TestPreRestoreKeptForUndoDaysAndPinnedNeverRotated(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	o := opts(1)
	o.UndoDays = 30
	write(t, filepath.Join(w.Store(), "f"), "a", 0o644)
	a := take(t, w, o).ID
	if _, err := Pin(context.Background(), w, a, o); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.Store(), "f"), "bb", 0o644)
	r, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a})
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for i := 0; i < 3; i++ {
		write(t, filepath.Join(w.Store(), "f"), strings.Repeat("c", i+3), 0o644)
		last = take(t, w, o).ID
	}
	got, _ := IDs(w)
	if strings.Join(got, " ") != a+" "+r.PreRestore+" "+last {
		t.Fatalf("kept %v, want the pinned %s, the undo %s and the newest %s", got, a, r.PreRestore, last)
	}
	infos, err := List(context.Background(), w, Options{})
	if err != nil || !infos[len(infos)-1].Pinned || infos[1].Label != LabelPreRestore {
		t.Fatalf("ls: %+v %v", infos, err)
	}
	if _, err := Unpin(context.Background(), w, a, o); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.Store(), "f"), "d", 0o644)
	take(t, w, o)
	if got, _ := IDs(w); got[0] == a {
		t.Fatalf("unpinned %s still kept: %v", a, got)
	}
	if _, err := Pin(context.Background(), w, "1999", o); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("pin of no snapshot: %v", err)
	}
}

func TestRestoreFromUnknownOrAmbiguous(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	o := opts(10)
	_, err := Restore(context.Background(), w, RestoreOptions{Options: o})
	if !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("restore without snapshots = %v", err)
	}
	write(t, filepath.Join(w.Store(), "f"), "1", 0o644)
	take(t, w, o)
	write(t, filepath.Join(w.Store(), "f"), "22", 0o644)
	take(t, w, o)
	_, err = Restore(context.Background(), w, RestoreOptions{Options: o, From: "2026"})
	var c *errs.Candidates
	if !errors.As(err, &c) || len(c.IDs) != 2 {
		t.Fatalf("ambiguous prefix = %v", err)
	}
	_, err = Restore(context.Background(), w, RestoreOptions{Options: o, From: "1999"})
	if !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("unknown prefix = %v", err)
	}
}

// inodes lists the inode of every regular file below dir (its .locks
// mount point left out), mapped to a path that has it.
func inodes(t *testing.T, dir string) map[uint64]string {
	t.Helper()
	m := map[uint64]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if d.Type().IsRegular() {
			m[inode(t, p)] = p
		}
		return nil
	})
	return m
}

// A restore with no live box links the live files that are provably the
// snapshot's (same inode and ctime as the snapshot recorded, same mode,
// owner, size, mtime) instead of copying them; everything else is copied.
// The restored store shares no inode with any snapshot, an in-place write
// to a restored file leaves every snapshot as it was, a file edited in
// place with its mtime put back is still restored to the snapshot's bytes,
// and the undo gives back the store as it was.
func TestRestoreReusesOnlyUntouchedLiveInodesNeverSnapshotOnes(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	s := w.Store()
	fillStore(t, s, "A")
	o := opts(10)
	a := take(t, w, o)
	stateA := treeState(t, s)
	untouched := filepath.Join(s, "repo/objects/ab/cdef")
	untouchedIno := inode(t, untouched)
	// State B: an in-place edit with the mtime put back (same size), a
	// chmod, a chown, a content change, a new file.
	head := filepath.Join(s, "repo/HEAD")
	fi, _ := os.Lstat(head)
	f, err := os.OpenFile(head, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("REF: MAIN"), 0)
	f.Close()
	os.Chtimes(head, fi.ModTime(), fi.ModTime())
	os.Chmod(filepath.Join(s, "secret"), 0o640)
	os.Chown(filepath.Join(s, "\xff\xfebin"), 200003, 200003)
	write(t, filepath.Join(s, "notes.md"), "notes B", 0o644)
	write(t, filepath.Join(s, "fresh"), "B only", 0o600)
	stateB := treeState(t, s)
	r, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got := treeState(t, s); got != stateA {
		t.Fatalf("restored store:\n%s\nwant\n%s", got, stateA)
	}
	if inode(t, untouched) != untouchedIno {
		t.Error("an untouched live file was copied, not reused")
	}
	ids, _ := IDs(w)
	snapState := map[string]string{}
	for _, id := range ids {
		snapState[id] = treeState(t, filepath.Join(w.Snapshot(id), "store"))
		snapInodes := inodes(t, w.Snapshot(id))
		for ino, p := range inodes(t, s) {
			if q, ok := snapInodes[ino]; ok {
				t.Errorf("restored %s shares its inode with snapshot file %s", p, q)
			}
		}
	}
	// A box writes in place into restored files, reused and copied alike.
	for _, p := range []string{untouched, head, filepath.Join(s, "notes.md"), filepath.Join(s, "secret")} {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("overwritten in place")
		f.Close()
	}
	for _, id := range ids {
		if got := treeState(t, filepath.Join(w.Snapshot(id), "store")); got != snapState[id] {
			t.Errorf("snapshot %s changed by an in-place write to the restored store", id)
		}
	}
	// The undo gives back state B, whatever was written since.
	if _, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: r.PreRestore}); err != nil {
		t.Fatal(err)
	}
	if got := treeState(t, s); got != stateB {
		t.Fatalf("undone store:\n%s\nwant\n%s", got, stateB)
	}
}

// An unreadable manifest makes prune refuse (14) and delete nothing: keeping
// "the newest N" by id could otherwise keep the broken snapshot and delete
// every good restore point. ls refuses the same way (14, not 1).
func TestPruneAndListRefuseAnUnreadableManifest(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	o := opts(10)
	var ids []string
	for i := 0; i < 3; i++ {
		write(t, filepath.Join(w.Store(), "f"), fmt.Sprint("gen ", i), 0o644)
		ids = append(ids, take(t, w, o).ID)
	}
	if err := os.WriteFile(w.SnapshotManifest(ids[2]), []byte("{garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Prune(context.Background(), w, 1, o)
	if !errors.Is(err, errs.ErrRefused) {
		t.Fatalf("prune = %v, want a refusal", err)
	}
	got, _ := IDs(w)
	if len(got) != 3 {
		t.Fatalf("prune deleted snapshots: %v", got)
	}
	if _, err := List(context.Background(), w, Options{}); !errors.Is(err, errs.ErrRefused) {
		t.Fatalf("ls = %v, want a refusal (exit 14)", err)
	}
}

// A restore never recreates FIFOs, sockets or devices, so its change list
// (and --dry-run's) says the live ones are deleted.
func TestRestoreListsLiveSpecialFilesAsDeleted(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	write(t, filepath.Join(w.Store(), "f"), "one", 0o644)
	o := opts(10)
	a := take(t, w, o)
	if err := syscall.Mkfifo(filepath.Join(w.Store(), "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.Store(), "f"), "two", 0o644)
	r, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range r.Changes {
		lines = append(lines, c.Line())
	}
	list := strings.Join(lines, "\n")
	if !strings.Contains(list, "*deleting   store/pipe") {
		t.Fatalf("dry run does not list the FIFO the restore deletes:\n%s", list)
	}
	if _, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(w.Store(), "pipe")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the restore kept the FIFO (%v): the list would be wrong", err)
	}
}

// A manifest whose header reads but whose body is damaged (garbage
// appended, a line replaced, the file cut short) makes prune refuse just
// the same: nothing deleted, exit 14.
func TestPruneRefusesAManifestDamagedBelowItsHeader(t *testing.T) {
	needRoot(t)
	damage := map[string]func(b []byte) []byte{
		"appended": func(b []byte) []byte { return append(b, "garbage\n"...) },
		"replaced": func(b []byte) []byte {
			ls := strings.SplitAfter(string(b), "\n")
			ls[1] = "garbage\n"
			return []byte(strings.Join(ls, ""))
		},
		"cut": func(b []byte) []byte { return b[:len(b)-10] },
		"line gone": func(b []byte) []byte {
			ls := strings.SplitAfter(string(b), "\n")
			return []byte(strings.Join(append(ls[:1], ls[2:]...), ""))
		},
	}
	for name, f := range damage {
		t.Run(name, func(t *testing.T) {
			w := newWorker(t, t.TempDir())
			o := opts(10)
			var ids []string
			for i := 0; i < 3; i++ {
				write(t, filepath.Join(w.Store(), "f"), fmt.Sprint("gen ", i), 0o644)
				ids = append(ids, take(t, w, o).ID)
			}
			for _, victim := range []string{ids[1], ids[2]} {
				p := w.SnapshotManifest(victim)
				b, _ := os.ReadFile(p)
				good := append([]byte(nil), b...)
				os.WriteFile(p, f(b), 0o600)
				_, err := Prune(context.Background(), w, 1, o)
				if !errors.Is(err, errs.ErrRefused) || !strings.Contains(err.Error(), victim) {
					t.Fatalf("damaged %s: prune = %v, want a refusal naming it", victim, err)
				}
				if got, _ := IDs(w); len(got) != 3 {
					t.Fatalf("prune deleted snapshots: %v", got)
				}
				os.WriteFile(p, good, 0o600)
			}
			if _, err := Prune(context.Background(), w, 1, o); err != nil {
				t.Fatalf("prune of sound manifests: %v", err)
			}
		})
	}
}

// A FIFO both live and in the snapshot: a restore deletes the live one and
// makes none, so its list says *deleting, and not also "skipped".
func TestRestoreListsALiveFIFOOnceAsDeleted(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	write(t, filepath.Join(w.Store(), "f"), "one", 0o644)
	if err := syscall.Mkfifo(filepath.Join(w.Store(), "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := opts(10)
	a := take(t, w, o)
	write(t, filepath.Join(w.Store(), "f"), "two", 0o644)
	r, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range r.Changes {
		if strings.Contains(c.Path, "pipe") {
			lines = append(lines, c.Line())
		}
	}
	if len(lines) != 1 || lines[0] != "*deleting   store/pipe" {
		t.Fatalf("the FIFO's lines: %q", lines)
	}
}
