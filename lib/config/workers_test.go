package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
)

// newHome makes an initialized home whose account databases hold one user
// at 200000 and one group at 200002, so allocation must step over them.
func newHome(t *testing.T) home.Home {
	t.Helper()
	dir := t.TempDir()
	h := home.Home{Dir: dir}
	if err := h.InitData(); err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(dir, "passwd")
	gr := filepath.Join(dir, "group")
	os.WriteFile(pw, []byte("root:x:0:0::/root:/bin/sh\nalice:x:200000:100::/home/alice:/bin/sh\nbad line\n"), 0o644)
	os.WriteFile(gr, []byte("root:x:0:\nbuilders:x:200002:\n"), 0o644)
	oldPw, oldGr := PasswdFile, GroupFile
	PasswdFile, GroupFile = pw, gr
	t.Cleanup(func() { PasswdFile, GroupFile = oldPw, oldGr })
	return h
}

func requireRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: worker folders are chowned to the box uid (CI runs as root)")
	}
}

func add(t *testing.T, h home.Home, n NewWorker) *Worker {
	t.Helper()
	w, err := AddWorker(context.Background(), h, n)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestAddWorkerTakesLowestFreeUIDNeverAnAccounts(t *testing.T) {
	requireRoot(t)
	h := newHome(t)
	var got []int
	for _, n := range []string{"a", "b", "c"} {
		got = append(got, add(t, h, NewWorker{Name: n}).UID)
	}
	want := []int{200001, 200003, 200004} // 200000 is alice's, 200002 a group's
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("uids %v, want %v", got, want)
	}
	w, err := LoadWorker(h, "b")
	if err != nil || w.UID != 200003 {
		t.Fatalf("spec: %+v %v", w, err)
	}
}

func TestAddWorkerFoldersOwnersAndModes(t *testing.T) {
	requireRoot(t)
	h := newHome(t)
	w := add(t, h, NewWorker{Name: "dobby", Command: []string{"/bin/true"}})
	d := h.Worker("dobby")
	for _, c := range []struct {
		path  string
		mode  uint32
		owner int
		dir   bool
	}{
		{d.Dir, 0o700, 0, true},
		{d.Store(), 0o700, w.UID, true},
		{d.StoreLocksMount(), 0o755, 0, true},
		{d.Locks(), 0o1777, 0, true},
		{d.StoreLock(), 0o644, 0, false},
		{d.ChannelStores(), 0o700, w.UID, true},
		{d.Snapshots(), 0o700, 0, true},
		{d.Tasks(), 0o700, 0, true},
		{d.View(), 0o755, 0, true},
		{d.Runs(), 0o755, 0, true},
	} {
		var st unix.Stat_t
		if err := unix.Lstat(c.path, &st); err != nil {
			t.Errorf("%s: %v", c.path, err)
			continue
		}
		isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		if st.Mode&07777 != c.mode || int(st.Uid) != c.owner || int(st.Gid) != c.owner || isDir != c.dir {
			t.Errorf("%s: mode %o uid %d gid %d dir %v; want %o %d dir %v", c.path, st.Mode&07777, st.Uid, st.Gid, isDir, c.mode, c.owner, c.dir)
		}
	}
	ents, _ := os.ReadDir(d.StoreLocksMount())
	if len(ents) != 0 {
		t.Errorf("store/.locks is not empty: %v", ents)
	}
}

func TestAddWorkerNeverOverwritesASpec(t *testing.T) {
	requireRoot(t)
	h := newHome(t)
	add(t, h, NewWorker{Name: "dobby", Role: "first"})
	before, _ := os.ReadFile(h.SpecFile("dobby"))
	_, err := AddWorker(context.Background(), h, NewWorker{Name: "dobby", Role: "second"})
	if !errors.Is(err, errs.ErrConflict) {
		t.Fatalf("got %v, want a conflict", err)
	}
	after, _ := os.ReadFile(h.SpecFile("dobby"))
	if string(before) != string(after) {
		t.Fatal("the spec was changed")
	}
}

func TestAddWorkerStepsOverTheUIDOfABrokenSpec(t *testing.T) {
	requireRoot(t)
	h := newHome(t)
	os.WriteFile(h.SpecFile("broken"), []byte("uid = 200001\nbogus = [\n"), 0o644)
	if w := add(t, h, NewWorker{Name: "next"}); w.UID != 200003 {
		t.Fatalf("uid %d, want 200003", w.UID)
	}
}

func TestAddWorkerExplicitUIDMustBeFree(t *testing.T) {
	requireRoot(t)
	h := newHome(t)
	add(t, h, NewWorker{Name: "a", UID: 300000})
	for uid, kind := range map[int]error{300000: errs.ErrConflict, 200000: errs.ErrConflict, 200002: errs.ErrConflict, -3: errs.ErrUsage} {
		if _, err := AddWorker(context.Background(), h, NewWorker{Name: "b", UID: uid}); !errors.Is(err, kind) {
			t.Errorf("uid %d: got %v, want %v", uid, err, kind)
		}
	}
	if _, err := os.Stat(h.SpecFile("b")); err == nil {
		t.Fatal("a refused add left a spec")
	}
}

func TestAddWorkerAgainKeepsTheKeptStoreAndItsUID(t *testing.T) {
	requireRoot(t)
	h := newHome(t)
	w := add(t, h, NewWorker{Name: "dobby"})
	os.WriteFile(filepath.Join(h.Worker("dobby").Store(), "notes"), []byte("keep me"), 0o600)
	if err := RemoveWorker(h, "dobby", false); err != nil {
		t.Fatal(err)
	}
	if x := add(t, h, NewWorker{Name: "other"}); x.UID == w.UID {
		t.Fatalf("another worker took uid %d of the kept store", x.UID)
	}
	again := add(t, h, NewWorker{Name: "dobby"})
	if again.UID != w.UID {
		t.Fatalf("re-added with uid %d, want the kept store's %d", again.UID, w.UID)
	}
	if b, err := os.ReadFile(filepath.Join(h.Worker("dobby").Store(), "notes")); err != nil || string(b) != "keep me" {
		t.Fatalf("kept store lost: %q %v", b, err)
	}
}

func TestAddWorkerHandsAKeptStoreToANewUID(t *testing.T) {
	requireRoot(t)
	h := newHome(t)
	add(t, h, NewWorker{Name: "dobby"})
	notes := filepath.Join(h.Worker("dobby").Store(), "sub", "notes")
	os.MkdirAll(filepath.Dir(notes), 0o755)
	os.WriteFile(notes, nil, 0o600)
	os.Symlink("/etc/passwd", filepath.Join(h.Worker("dobby").Store(), "link"))
	if err := RemoveWorker(h, "dobby", false); err != nil {
		t.Fatal(err)
	}
	w := add(t, h, NewWorker{Name: "dobby", UID: 310000})
	for _, p := range []string{notes, filepath.Dir(notes), filepath.Join(h.Worker("dobby").Store(), "link")} {
		var st unix.Stat_t
		unix.Lstat(p, &st)
		if int(st.Uid) != w.UID {
			t.Errorf("%s: owner %d, want %d", p, st.Uid, w.UID)
		}
	}
	var st unix.Stat_t
	unix.Stat("/etc/passwd", &st)
	if st.Uid != 0 {
		t.Fatal("followed a link out of the store")
	}
}

func TestConcurrentAddsGetDistinctUIDs(t *testing.T) {
	requireRoot(t)
	h := newHome(t)
	var mu sync.Mutex
	var uids []int
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := AddWorker(context.Background(), h, NewWorker{Name: fmt.Sprintf("w%d", i)})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			uids = append(uids, w.UID)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Ints(uids)
	for i := 1; i < len(uids); i++ {
		if uids[i] == uids[i-1] {
			t.Fatalf("uid %d given twice: %v", uids[i], uids)
		}
	}
}

func TestRemoveWorkerRefusesWhileABoxIsLive(t *testing.T) {
	requireRoot(t)
	h := newHome(t)
	add(t, h, NewWorker{Name: "dobby"})
	run := home.NewRunID(time.Now())
	dir := h.Worker("dobby").Run(run)
	os.MkdirAll(dir, 0o755)
	b, err := runs.SelfBoxInfo("dobby", run, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := runs.WriteBoxInfo(dir, b); err != nil {
		t.Fatal(err)
	}
	err = RemoveWorker(h, "dobby", true)
	if !errors.Is(err, errs.ErrConflict) {
		t.Fatalf("got %v, want a conflict", err)
	}
	if _, err := os.Stat(h.SpecFile("dobby")); err != nil {
		t.Fatal("the spec was removed")
	}
	os.Remove(home.BoxJSON(dir))
	if err := RemoveWorker(h, "dobby", true); err != nil {
		t.Fatal(err)
	}
}

func TestRemoveWorkerKeepsDataUnlessPurged(t *testing.T) {
	requireRoot(t)
	h := newHome(t)
	add(t, h, NewWorker{Name: "a"})
	add(t, h, NewWorker{Name: "b"})
	if err := RemoveWorker(h, "a", false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(h.SpecFile("a")); !os.IsNotExist(err) {
		t.Fatal("spec kept")
	}
	if _, err := os.Stat(h.Worker("a").Store()); err != nil {
		t.Fatal("data removed without --purge")
	}
	if err := RemoveWorker(h, "b", true); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(h.DataWorkers())
	if len(ents) != 1 || ents[0].Name() != "a" {
		t.Fatalf("data/workers holds %v, want only a", ents)
	}
	if err := RemoveWorker(h, "b", false); !errors.Is(err, errs.ErrNoHome) {
		t.Fatalf("second rm: %v, want no such worker", err)
	}
}

func TestRemoveWorkerOfABrokenSpec(t *testing.T) {
	h := newHome(t)
	os.WriteFile(h.SpecFile("broken"), []byte("[[[\n"), 0o644)
	if err := RemoveWorker(h, "broken", false); err != nil {
		t.Fatal(err)
	}
}
