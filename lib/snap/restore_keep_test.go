package snap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// deepChain nests maxDepth+1 folders "d" below dir and puts a file in the
// deepest: a subtree every take skips. It returns the deepest folder.
func deepChain(t *testing.T, dir, content string) string {
	t.Helper()
	p := filepath.Join(dir, strings.Repeat("d/", maxDepth+1))
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(p, "x"), content, 0o644)
	return filepath.Clean(p)
}

// What a snapshot skipped (here a folder below the depth limit, with a
// file in it: no snapshot holds a copy, the pre-restore one included) a
// restore leaves as it is: the same inode, in the same place, its folder's
// mtime the snapshot's. Its dry run and its change list say "skipped" for
// it and delete nothing at or below it; the rest is restored.
func TestRestoreKeepsWhatTheSnapshotSkipped(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	write(t, filepath.Join(w.Store(), "f"), "one", 0o644)
	deep := deepChain(t, w.Store(), "precious")
	ino := inode(t, deep)
	o := opts(10)
	a := take(t, w, o)
	stateA := treeState(t, w.Store())
	skippedLine := "skipped store" + strings.Repeat("/d", maxDepth+1) + " (" + reasonTooDeep + ")"
	if data := string(mustRead(t, filepath.Join(w.Snapshot(a.ID), home.SnapChanges))); !strings.Contains(data, skippedLine+"\n") {
		t.Fatalf("snapshot %s does not skip the deep folder:\n%.300s", a.ID, data)
	}
	write(t, filepath.Join(w.Store(), "f"), "two", 0o644)
	write(t, filepath.Join(w.Store(), "g"), "new", 0o644)

	check := func(r *RestoreResult) {
		t.Helper()
		skips := 0
		for _, c := range r.Changes {
			l := c.Line()
			if l == skippedLine {
				skips++
			}
			if c.Op == OpDelete && strings.HasPrefix(c.Path, "store/d") {
				t.Errorf("the restore deletes %.60s...", l)
			}
		}
		if skips != 1 {
			t.Errorf("%d lines %q in the restore's changes", skips, skippedLine)
		}
	}
	dry, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	check(dry)
	r, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID})
	if err != nil {
		t.Fatal(err)
	}
	check(r)
	if got := treeState(t, w.Store()); got != stateA {
		t.Fatal("after the restore the store is not the snapshot's state with the skipped folder kept")
	}
	if inode(t, deep) != ino || string(mustRead(t, filepath.Join(deep, "x"))) != "precious" {
		t.Fatal("the skipped folder was not kept as it was")
	}
	if data := string(mustRead(t, filepath.Join(w.Snapshot(r.PreRestore), home.SnapRestoreChanges))); !strings.Contains(data, skippedLine+"\n") || strings.Contains(data, "*deleting   store/d") {
		t.Fatalf("the restore's kept change list:\n%.300s", data)
	}
	if _, err := os.Stat(filepath.Join(w.Snapshots(), keepName)); !os.IsNotExist(err) {
		t.Fatalf("%s left behind: %v", keepName, err)
	}
	// restore --path of the folder above it keeps it too.
	if err := os.Chmod(filepath.Join(w.Store(), "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(context.Background(), w, RestoreOptions{Options: o, From: a.ID, Path: "d"}); err != nil {
		t.Fatal(err)
	}
	if inode(t, deep) != ino || treeState(t, w.Store()) != stateA {
		t.Fatal("restore --path d did not keep the skipped folder, or did not restore d")
	}
	// The next take goes on as before: the folder skipped again.
	write(t, filepath.Join(w.Store(), "f"), "three", 0o644)
	if b := take(t, w, o); b.ID == "" {
		t.Fatal("no snapshot after the restore")
	}
}

// A list of kept paths that cannot be read is refused, never acted on
// nor overwritten: every take fails on it and says which file it is.
func TestUnreadableKeepListIsRefused(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	write(t, filepath.Join(w.Store(), "f"), "one", 0o644)
	o := opts(10)
	take(t, w, o)
	for _, bad := range []string{"not json\n", `[{"staging":"../x","tree":"store","paths":["a"],"mtimes":[0]}]` + "\n",
		`[{"staging":".restore-1-0","tree":"store","paths":["../../etc"],"mtimes":[0]}]` + "\n"} {
		p := filepath.Join(w.Snapshots(), keepName)
		write(t, p, bad, 0o600)
		write(t, filepath.Join(w.Store(), "f"), bad, 0o644)
		_, err := Take(context.Background(), w, o)
		if !errors.Is(err, errs.ErrRefused) || !strings.Contains(err.Error(), keepName) {
			t.Fatalf("take over %q = %v, want a refusal naming %s", bad, err, keepName)
		}
		if got := string(mustRead(t, p)); got != bad {
			t.Fatalf("the list was changed to %q", got)
		}
	}
}

// kill -9 a restore at random instants while the store holds a file no
// snapshot can copy (a lease is held on it): once the next session's
// cleanup has run, that file is in the live store, the same inode,
// whether the restore was killed before its swap, between the swap and
// the move, or after; the rest of the store is wholly the old or the
// restored state.
func TestKilledRestoreKeepsWhatTheSnapshotSkipped(t *testing.T) {
	needRoot(t)
	t.Parallel()
	dir := t.TempDir()
	w := newWorker(t, dir)
	populate(t, w.Store(), 100)
	leased := filepath.Join(w.Store(), "d05", "leased")
	write(t, leased, "precious", 0o644)
	ino := inode(t, leased)
	holder := exec.Command(os.Args[0], "-test.run=^$")
	holder.Env = append(os.Environ(), "SNAP_CHILD=lease", "SNAP_FILE="+leased)
	stdin, _ := holder.StdinPipe()
	stdout, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Wait()
	defer stdin.Close()
	if ready := make([]byte, 3); func() bool { _, err := io.ReadFull(stdout, ready); return err != nil || string(ready) != "ok\n" }() {
		t.Fatal("the lease holder did not start")
	}
	o := opts(1000)
	x := take(t, w, o)
	if !contains(lines(mustRead(t, w.SnapshotChanges(x.ID))), "skipped store/d05/leased (a lease is held on it)") {
		t.Fatal("the leased file is not skipped")
	}
	stateX := treeStateNoRead(t, w.Store(), "d05/leased")
	for i := 0; i < 100; i += 3 {
		write(t, filepath.Join(w.Store(), fmt.Sprintf("d%02d/f%03d", i%20, i)), "changed in Y", 0o600)
	}
	y := take(t, w, o).ID
	stateY := treeStateNoRead(t, w.Store(), "d05/leased")
	cleanup := func() {
		t.Helper()
		s, err := open(context.Background(), w, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer s.close()
		if err := s.cleanup(); err != nil {
			t.Fatalf("cleanup after a killed restore: %v", err)
		}
	}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	start := time.Now()
	runKilled(t, rng, dir, "restore", x.ID, time.Hour) // calibration: one whole restore
	span := time.Since(start) * 13 / 10
	if treeStateNoRead(t, w.Store(), "d05/leased") != stateX {
		t.Fatal("a whole restore did not restore")
	}
	iterations := 20 // the window between swap and move is hit for sure by the next test
	if testing.Short() {
		iterations = 8
	}
	done, moves := 0, 0
	for i := 0; i < iterations; i++ {
		before := treeStateNoRead(t, w.Store(), "d05/leased")
		target, targetState := x.ID, stateX
		if before == stateX {
			target, targetState = y, stateY
		} else if before != stateY {
			t.Fatalf("iteration %d: store is neither state", i)
		}
		fin := runKilled(t, rng, dir, "restore", target, span)
		span = adapt(span, fin)
		_, kerr := os.Stat(filepath.Join(w.Snapshots(), keepName))
		_, lerr := os.Lstat(leased)
		if kerr == nil && lerr != nil {
			moves++ // killed between the swap and the move: cleanup's to finish
		}
		if fin {
			done++
		}
		cleanup()
		if _, err := os.Stat(filepath.Join(w.Snapshots(), keepName)); !os.IsNotExist(err) {
			t.Fatalf("iteration %d: %s left after cleanup: %v", i, keepName, err)
		}
		if got := inode(t, leased); got != ino {
			t.Fatalf("iteration %d: the skipped file is inode %d, was %d", i, got, ino)
		}
		if after := treeStateNoRead(t, w.Store(), "d05/leased"); after != before && after != targetState {
			t.Fatalf("iteration %d: store is a mix of old and restored", i)
		}
	}
	t.Logf("%d of %d restores finished; %d killed between the swap and the move", done, iterations, moves)
}

// A restore killed right after its swap, before it moved what the
// snapshot skipped into the restored tree: the old tree, at its staging
// name, still holds it, and the list says so; the next session's cleanup
// moves it into the live tree before it deletes the old one.
func TestRestoreKilledAfterItsSwapKeepsWhatTheSnapshotSkipped(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	w := newWorker(t, dir)
	write(t, filepath.Join(w.Store(), "f"), "one", 0o644)
	deep := deepChain(t, w.Store(), "precious")
	ino := inode(t, deep)
	o := opts(10)
	a := take(t, w, o)
	stateA := treeState(t, w.Store())
	write(t, filepath.Join(w.Store(), "f"), "two", 0o644)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SNAP_CHILD=restore-swapped", "SNAP_HOME="+dir, "SNAP_FROM="+a.ID)
	if err := cmd.Run(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the restore was not killed at its crash point: %v", err)
	}
	if string(mustRead(t, filepath.Join(w.Store(), "f"))) != "one" {
		t.Fatal("killed before its swap: the crash point is not after it")
	}
	if _, err := os.Lstat(deep); !os.IsNotExist(err) {
		t.Fatalf("the skipped folder is in the live tree before the cleanup: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w.Snapshots(), keepName)); err != nil {
		t.Fatalf("no list of what the restore keeps: %v", err)
	}
	// Any session's cleanup finishes it: here a take's.
	take(t, w, o)
	if inode(t, deep) != ino || string(mustRead(t, filepath.Join(deep, "x"))) != "precious" {
		t.Fatal("the skipped folder was not put back in the restored tree")
	}
	if got := treeState(t, w.Store()); got != stateA {
		t.Fatal("after the cleanup the store is not the snapshot's state with the skipped folder kept")
	}
	if _, err := os.Stat(filepath.Join(w.Snapshots(), keepName)); !os.IsNotExist(err) {
		t.Fatalf("%s left after the cleanup: %v", keepName, err)
	}
	names, _ := os.ReadDir(w.Dir)
	for _, n := range names {
		if strings.HasPrefix(n.Name(), home.RestorePrefix) {
			t.Fatalf("%s left after the cleanup", n.Name())
		}
	}
}
