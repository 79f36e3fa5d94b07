package snap

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/home"
)

// TestMain doubles as the child process the crash tests kill: with
// SNAP_CHILD set it runs one take or restore and exits.
func TestMain(m *testing.M) {
	if n, err := strconv.ParseUint(os.Getenv("SNAP_NOFILE"), 10, 64); err == nil {
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n})
	}
	switch os.Getenv("SNAP_CHILD") {
	case "":
		os.Exit(m.Run())
	case "take":
		w := home.Home{Dir: os.Getenv("SNAP_HOME")}.Worker("dobby")
		_, err := Take(context.Background(), w, Options{Keep: 1000, Wait: time.Minute})
		exitWith(err)
	case "lease":
		holdLease(os.Getenv("SNAP_FILE"))
	case "restore":
		w := home.Home{Dir: os.Getenv("SNAP_HOME")}.Worker("dobby")
		_, err := Restore(context.Background(), w, RestoreOptions{Options: Options{Keep: 1000, Wait: time.Minute}, From: os.Getenv("SNAP_FROM")})
		exitWith(err)
	case "restore-swapped": // killed right after its swap (TestRestoreKilledAfterItsSwapKeepsWhatTheSnapshotSkipped)
		afterSwap = func() { syscall.Kill(os.Getpid(), syscall.SIGKILL) }
		w := home.Home{Dir: os.Getenv("SNAP_HOME")}.Worker("dobby")
		_, err := Restore(context.Background(), w, RestoreOptions{Options: Options{Keep: 1000, Wait: time.Minute}, From: os.Getenv("SNAP_FROM")})
		exitWith(err)
	case "restore-path":
		w := home.Home{Dir: os.Getenv("SNAP_HOME")}.Worker("dobby")
		_, err := Restore(context.Background(), w, RestoreOptions{Options: Options{Keep: 1000, Wait: time.Minute}, From: os.Getenv("SNAP_FROM"), Path: killedPath})
		exitWith(err)
	}
}

// holdLease takes a write lease on path, says "ok" on stdout and keeps
// it until stdin closes (TestLeasedFileSkipped). The lease break's SIGIO
// is ignored, as a hostile holder would.
func holdLease(path string) {
	signal.Ignore(syscall.SIGIO)
	fd, err := syscall.Open(path, syscall.O_RDWR, 0)
	if err != nil {
		exitWith(err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
		exitWith(fmt.Errorf("F_SETLEASE: %w", err))
	}
	os.Stdout.WriteString("ok\n")
	io.Copy(io.Discard, os.Stdin)
	unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK)
	exitWith(nil)
}

func exitWith(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runKilled starts a child doing op and kills it with SIGKILL after a
// random pause (or lets it finish when the pause outlasts it).
func runKilled(t *testing.T, rng *rand.Rand, dir, op, from string, maxPause time.Duration) (finished bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SNAP_CHILD="+op, "SNAP_HOME="+dir, "SNAP_FROM="+from)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	select {
	case <-exited:
		return true
	case <-time.After(time.Duration(rng.Int63n(int64(maxPause)))):
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		return false
	}
}

// adapt steers the kill window so that about half the children finish:
// kills then land all through the operation whatever this machine's speed.
func adapt(span time.Duration, finished bool) time.Duration {
	if finished {
		return span * 9 / 10
	}
	return span * 11 / 10
}

func populate(t *testing.T, s string, n int) {
	for i := 0; i < n; i++ {
		write(t, filepath.Join(s, fmt.Sprintf("d%02d/f%03d", i%20, i)), strings.Repeat("x", 100+i), 0o644)
	}
}

// kill -9 at random instants: a listed snapshot is always exactly the
// store state it was taken from, and the leftovers go at the next take.
func TestKilledTakeNeverListsAWrongSnapshot(t *testing.T) {
	needRoot(t)
	t.Parallel()
	dir := t.TempDir()
	w := newWorker(t, dir)
	populate(t, w.Store(), 200)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	want := map[string]string{} // snapshot id -> the store state it must hold
	// Calibrate: how long one whole child take lasts, so kills land
	// before, during and after its rename.
	runKilled(t, rng, dir, "take", "", time.Hour) // the first, full copy
	write(t, filepath.Join(w.Store(), "d00/f000"), "calibration", 0o644)
	start := time.Now()
	runKilled(t, rng, dir, "take", "", time.Hour) // a typical one
	span := time.Since(start) * 2
	t.Logf("one take: %s", span)
	ids0, _ := IDs(w)
	for _, id := range ids0 {
		want[id] = treeState(t, filepath.Join(w.Snapshot(id), "store"))
	}
	iterations := 100
	if testing.Short() {
		iterations = 20
	}
	for i := 0; i < iterations; i++ {
		for j := 0; j < 5; j++ {
			k := rng.Intn(200)
			write(t, filepath.Join(w.Store(), fmt.Sprintf("d%02d/f%03d", k%20, k)), fmt.Sprintf("gen %d.%d", i, j), 0o644)
		}
		os.Chmod(filepath.Join(w.Store(), fmt.Sprintf("d%02d", rng.Intn(20))), os.FileMode(0o700+rng.Intn(2)*0o55))
		state := treeState(t, w.Store())
		span = adapt(span, runKilled(t, rng, dir, "take", "", span))
		ids, err := IDs(w)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if _, ok := want[id]; ok {
				continue // checked when it appeared; checked again at the end
			}
			want[id] = state
			if got := treeState(t, filepath.Join(w.Snapshot(id), "store")); got != want[id] {
				t.Fatalf("iteration %d: snapshot %s differs from the store it was taken from", i, id)
			}
			if _, err := ParseManifest(mustRead(t, w.SnapshotManifest(id))); err != nil {
				t.Fatalf("snapshot %s: %v", id, err)
			}
		}
	}
	for id, state := range want {
		if got := treeState(t, filepath.Join(w.Snapshot(id), "store")); got != state {
			t.Fatalf("snapshot %s changed after it was taken", id)
		}
	}
	take(t, w, opts(1000))
	assertNoPartial(t, w.Snapshots())
	t.Logf("%d iterations, %d snapshots completed", iterations, len(want))
}

// kill -9 a restore at random instants: the store is entirely the old
// tree or entirely the restored one, whenever the restored one is in
// place its pre-restore snapshot (the undo) exists, and a restore's
// change list is kept only by a restore that swapped its tree in.
func TestKilledRestoreLeavesOldOrNewTree(t *testing.T) {
	needRoot(t)
	t.Parallel()
	dir := t.TempDir()
	w := newWorker(t, dir)
	populate(t, w.Store(), 150)
	o := opts(1000)
	x := take(t, w, o).ID
	stateX := treeState(t, w.Store())
	for i := 0; i < 150; i += 3 {
		write(t, filepath.Join(w.Store(), fmt.Sprintf("d%02d/f%03d", i%20, i)), "changed in Y", 0o600)
	}
	os.RemoveAll(filepath.Join(w.Store(), "d07"))
	y := take(t, w, o).ID
	stateY := treeState(t, w.Store())
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	start := time.Now()
	runKilled(t, rng, dir, "restore", x, time.Hour) // calibration: one whole restore
	span := time.Since(start) * 13 / 10
	if treeState(t, w.Store()) != stateX {
		t.Fatal("a whole restore did not restore")
	}
	iterations := 40
	if testing.Short() {
		iterations = 10
	}
	done := 0
	for i := 0; i < iterations; i++ {
		before := treeState(t, w.Store())
		target, targetState := x, stateX
		if before == stateX {
			target, targetState = y, stateY
		} else if before != stateY {
			t.Fatalf("iteration %d: store is neither state", i)
		}
		idsBefore, _ := IDs(w)
		span = adapt(span, runKilled(t, rng, dir, "restore", target, span))
		after := treeState(t, w.Store())
		if after != before && after != targetState {
			t.Fatalf("iteration %d: store is a mix of old and restored", i)
		}
		if after == before {
			ids, _ := IDs(w)
			for _, id := range ids[len(idsBefore):] {
				if _, err := os.Stat(filepath.Join(w.Snapshot(id), home.SnapRestoreChanges)); err == nil {
					t.Fatalf("iteration %d: snapshot %s keeps the change list of a restore that was not done", i, id)
				}
			}
		}
		if after == targetState && after != before {
			done++
			ids, _ := IDs(w)
			found := false
			for _, id := range ids[len(idsBefore):] {
				h := readManifest(t, w.SnapshotManifest(id)).Header
				if h.Label == LabelPreRestore && treeState(t, filepath.Join(w.Snapshot(id), "store")) == before {
					found = true
				}
			}
			if !found {
				t.Fatalf("iteration %d: restored without a pre-restore snapshot of the old state", i)
			}
		}
	}
	t.Logf("%d of %d restores completed before the kill", done, iterations)
}

// killedPath is the folder TestKilledRestorePathLeavesOldOrNewPath restores.
const killedPath = "d03"

// kill -9 a restore --path at random instants: the path is entirely the
// old or the restored folder, the rest of the store never changes, a
// restored path always has its pre-restore snapshot, and a restore's
// change list is kept only by a restore that swapped its path in.
func TestKilledRestorePathLeavesOldOrNewPath(t *testing.T) {
	needRoot(t)
	t.Parallel()
	dir := t.TempDir()
	w := newWorker(t, dir)
	populate(t, w.Store(), 300)
	o := opts(1000)
	sub := filepath.Join(w.Store(), killedPath)
	x := take(t, w, o).ID
	stateX := treeState(t, sub)
	for i := 3; i < 300; i += 20 {
		if i%40 == 3 {
			write(t, filepath.Join(sub, fmt.Sprintf("f%03d", i)), "changed in Y", 0o600)
		} else {
			os.Remove(filepath.Join(sub, fmt.Sprintf("f%03d", i)))
		}
	}
	write(t, filepath.Join(sub, "new/deep"), "only in Y", 0o644)
	write(t, filepath.Join(w.Store(), "d04/f004"), "changed in Y", 0o644)
	y := take(t, w, o).ID
	stateY := treeState(t, sub)
	rest := func() string {
		st := treeState(t, w.Store())
		var out []string
		for _, l := range strings.Split(st, "\n") {
			if !strings.HasPrefix(l, `"`+killedPath) && !strings.HasPrefix(l, `"."`) {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	others := rest()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	start := time.Now()
	runKilled(t, rng, dir, "restore-path", x, time.Hour) // calibration: one whole restore
	span := time.Since(start) * 13 / 10
	if treeState(t, sub) != stateX {
		t.Fatal("a whole restore --path did not restore")
	}
	iterations := 40
	if testing.Short() {
		iterations = 10
	}
	done := 0
	for i := 0; i < iterations; i++ {
		before := treeState(t, sub)
		target, targetState := x, stateX
		if before == stateX {
			target, targetState = y, stateY
		} else if before != stateY {
			t.Fatalf("iteration %d: the path is neither state", i)
		}
		idsBefore, _ := IDs(w)
		span = adapt(span, runKilled(t, rng, dir, "restore-path", target, span))
		after := treeState(t, sub)
		if after != before && after != targetState {
			t.Fatalf("iteration %d: the path is a mix of old and restored", i)
		}
		if rest() != others {
			t.Fatalf("iteration %d: a restore --path changed the store outside the path", i)
		}
		ids, _ := IDs(w)
		restored := after == targetState && after != before
		found := false
		for _, id := range ids[len(idsBefore):] {
			h := readManifest(t, w.SnapshotManifest(id)).Header
			if h.Label != LabelPreRestore {
				continue
			}
			if treeState(t, filepath.Join(w.Snapshot(id), "store", killedPath)) == before {
				found = true
			}
			if _, err := os.Stat(filepath.Join(w.Snapshot(id), home.SnapRestoreChanges)); err == nil && !restored {
				t.Fatalf("iteration %d: snapshot %s keeps the change list of a restore that was not done", i, id)
			}
		}
		if restored {
			done++
			if !found {
				t.Fatalf("iteration %d: restored without a pre-restore snapshot of the old state", i)
			}
		}
	}
	t.Logf("%d of %d restores completed before the kill", done, iterations)
}
