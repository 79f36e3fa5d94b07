package home

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/errs"
)

func TestPathsOfLayout(t *testing.T) {
	h := Home{Dir: "/h"}
	w := h.Worker("dobby")
	for got, want := range map[string]string{
		h.OrgFile():           "/h/org.toml",
		h.SpecFile("dobby"):   "/h/workers/dobby.toml",
		h.Data():              "/h/data",
		h.DispatchLock():      "/h/data/dispatch.lock",
		h.DispatchJSON():      "/h/data/dispatch.json",
		w.Store():             "/h/data/workers/dobby/store",
		w.StoreLocksMount():   "/h/data/workers/dobby/store/.locks",
		w.Locks():             "/h/data/workers/dobby/locks",
		w.StoreLock():         "/h/data/workers/dobby/locks/store",
		w.ChannelStores():     "/h/data/workers/dobby/channel-stores",
		w.Snapshots():         "/h/data/workers/dobby/store-snapshots",
		w.TasksFile():         "/h/data/workers/dobby/tasks/tasks.json",
		w.Journal():           "/h/data/workers/dobby/tasks/journal.jsonl",
		w.TasksLock():         "/h/data/workers/dobby/tasks/.lock",
		w.Schedule():          "/h/data/workers/dobby/view/schedule.json",
		w.Run("R"):            "/h/data/workers/dobby/runs/R",
		RunJSON("/r"):         "/r/run.json",
		BoxJSON("/r"):         "/r/box.json",
		Outbox("/r"):          "/r/outbox",
		StoreChanges("/r"):    "/r/store-changes.txt",
		ContainerID("R"):      "roster-R",
		h.Trash("dobby", "x"): "/h/data/workers/.trash-dobby-x",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func TestOpenRefusesAHomeWithoutData(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(dir)
	if !errors.Is(err, errs.ErrNoHome) || !strings.Contains(errs.HintOf(err), "roster init") {
		t.Fatalf("got %v (hint %q), want no home with a hint to run roster init", err, errs.HintOf(err))
	}
	if strings.Contains(err.Error(), "no home") {
		t.Errorf("message repeats the kind: %q", err)
	}
	os.WriteFile(filepath.Join(dir, "data"), nil, 0o600)
	if _, err := Open(dir); !errors.Is(err, errs.ErrNoHome) {
		t.Fatalf("data as a file: %v", err)
	}
	h := Home{Dir: dir + "/h"}
	if err := h.InitData(); err != nil {
		t.Fatal(err)
	}
	if got, err := Open(dir + "/h/."); err != nil || got.Dir != dir+"/h" {
		t.Fatalf("Open = %+v, %v", got, err)
	}
}

func TestAtIsAbsolute(t *testing.T) {
	h, err := At("")
	wd, _ := os.Getwd()
	if err != nil || h.Dir != wd {
		t.Fatalf("At(\"\") = %+v, %v; want the current directory", h, err)
	}
}

func TestInitDataModesAndIdempotence(t *testing.T) {
	h := Home{Dir: filepath.Join(t.TempDir(), "new")}
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	for i := 0; i < 2; i++ {
		if err := h.InitData(); err != nil {
			t.Fatal(err)
		}
		for p, mode := range map[string]os.FileMode{h.Data(): 0o700, h.DataWorkers(): 0o700, h.WorkersDir(): 0o755} {
			fi, err := os.Stat(p)
			if err != nil || fi.Mode().Perm() != mode || !fi.IsDir() {
				t.Fatalf("%s: %v %v, want folder %o", p, fi.Mode(), err, mode)
			}
		}
		os.Chmod(h.Data(), 0o755) // InitData brings it back
	}
}

func TestCreateFoldersRefusesALinkInPlace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: folders are chowned to the box uid (CI runs as root)")
	}
	h := Home{Dir: t.TempDir()}
	if err := h.InitData(); err != nil {
		t.Fatal(err)
	}
	w := h.Worker("dobby")
	os.MkdirAll(w.Dir, 0o700)
	target := t.TempDir()
	os.Symlink(target, w.Store())
	err := w.CreateFolders(200000)
	if err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Fatalf("got %v, want a refusal of the link", err)
	}
	var st unix.Stat_t
	unix.Stat(target, &st)
	if st.Uid != 0 {
		t.Fatal("chowned through the link")
	}
}

func TestCreateFoldersKeepsAStoreLockFileAndRefusesOtherThings(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: folders are chowned to the box uid (CI runs as root)")
	}
	h := Home{Dir: t.TempDir()}
	h.InitData()
	w := h.Worker("dobby")
	if err := w.CreateFolders(200000); err != nil {
		t.Fatal(err)
	}
	if err := w.CreateFolders(200000); err != nil {
		t.Fatalf("again: %v", err)
	}
	os.Remove(w.StoreLock())
	unix.Mkfifo(w.StoreLock(), 0o644)
	if err := w.CreateFolders(200000); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a FIFO as the store lock: %v", err)
	}
	if w.StoreOwner() != 200000 {
		t.Fatalf("StoreOwner = %d", w.StoreOwner())
	}
	if h.Worker("ghost").StoreOwner() != -1 {
		t.Fatal("StoreOwner of no store")
	}
	if err := w.CreateFolders(0); err == nil {
		t.Fatal("uid 0 accepted")
	}
}

func TestWorkerOfStoreByPlace(t *testing.T) {
	w, ok := WorkerOfStore("/h/data/workers/dobby/store")
	if !ok || w.Name != "dobby" || w.Store() != "/h/data/workers/dobby/store" {
		t.Fatalf("WorkerOfStore = %+v, %v", w, ok)
	}
	for _, p := range []string{"/h/data/workers/dobby/store2", "/h/data/other/dobby/store", "/h/x/workers/dobby/store", "/h/data/workers/Bad!/store", "/store"} {
		if w, ok := WorkerOfStore(p); ok {
			t.Errorf("WorkerOfStore(%q) = %+v, want none", p, w)
		}
	}
}
