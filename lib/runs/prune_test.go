package runs

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/home"
)

func mkRun(t *testing.T, w home.Worker, id string) string {
	t.Helper()
	dir := w.Run(id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	st, _ := home.RunTime(id)
	r := &Record{ID: id, Worker: w.Name, Kind: "filed", StartedAt: st, Ended: "done"}
	if err := WriteRecord(dir, r); err != nil {
		t.Fatal(err)
	}
	return dir
}

func remaining(t *testing.T, w home.Worker) []string {
	t.Helper()
	ids, err := IDs(w)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(ids)
	return ids
}

func TestPruneNeverDeletesLiveOrClaimedRuns(t *testing.T) {
	h := home.Home{Dir: t.TempDir()}
	w := h.Worker("dobby")
	ids := []string{
		"2026-01-01-00-00-00-aaaa", // claimed by a task: kept
		"2026-01-02-00-00-00-bbbb", // live box (this test process): kept
		"2026-01-03-00-00-00-cccc", // pruned
		"2026-01-04-00-00-00-dddd", // the newest: kept by --keep 1
	}
	for _, id := range ids {
		mkRun(t, w, id)
	}
	b, err := SelfBoxInfo("dobby", ids[1], "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteBoxInfo(w.Run(ids[1]), b); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(w.Tasks(), 0o700)
	tasks := `{"format":1,"version":3,"tasks":[{"id":"t-x","state":"pending","claim":{"run":"` + ids[0] + `","at":"2026-01-01T00:00:00Z"}}],"templates":[]}`
	if err := os.WriteFile(w.TasksFile(), []byte(tasks), 0o600); err != nil {
		t.Fatal(err)
	}

	dry, problems := Prune(h, PruneOptions{Keep: 1, DryRun: true})
	if len(problems) != 0 || len(dry) != 1 || dry[0].ID != ids[2] {
		t.Fatalf("dry run: pruned %v, problems %v; want only %s", dry, problems, ids[2])
	}
	if got := remaining(t, w); len(got) != 4 {
		t.Fatalf("dry run deleted something: %v", got)
	}
	pruned, problems := Prune(h, PruneOptions{Keep: 1})
	if len(problems) != 0 || len(pruned) != 1 || pruned[0].ID != ids[2] {
		t.Fatalf("pruned %v, problems %v; want only %s", pruned, problems, ids[2])
	}
	want := []string{ids[0], ids[1], ids[3]}
	if got := remaining(t, w); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("left %v, want %v", got, want)
	}
	if ents, _ := os.ReadDir(w.Runs()); len(ents) != 3 {
		t.Fatalf("trash left behind: %v", ents)
	}
}

func TestPruneOlderThanKeepsRecentRuns(t *testing.T) {
	h := home.Home{Dir: t.TempDir()}
	w := h.Worker("dobby")
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	old := home.NewRunID(now.Add(-72 * time.Hour))
	recent := home.NewRunID(now.Add(-1 * time.Hour))
	mkRun(t, w, old)
	mkRun(t, w, recent)
	pruned, problems := Prune(h, PruneOptions{Keep: -1, OlderThan: 48 * time.Hour, Now: now})
	if len(problems) != 0 || len(pruned) != 1 || pruned[0].ID != old {
		t.Fatalf("pruned %v (%v), want %s", pruned, problems, old)
	}
	// --keep and --older-than together: both must allow the deletion.
	mkRun(t, w, old)
	pruned, _ = Prune(h, PruneOptions{Keep: 2, OlderThan: 48 * time.Hour, Now: now})
	if len(pruned) != 0 {
		t.Fatalf("pruned %v although --keep 2 keeps both", pruned)
	}
}

func TestPruneRefusesWorkerWithUnreadableTasks(t *testing.T) {
	h := home.Home{Dir: t.TempDir()}
	w := h.Worker("dobby")
	mkRun(t, w, "2026-01-01-00-00-00-aaaa")
	os.MkdirAll(w.Tasks(), 0o700)
	os.WriteFile(w.TasksFile(), []byte(`{"format":1,"tasks":[`), 0o600)
	other := h.Worker("kreacher")
	mkRun(t, other, "2026-01-01-00-00-00-bbbb")
	pruned, problems := Prune(h, PruneOptions{Keep: 0})
	if len(problems) != 1 || len(pruned) != 1 || pruned[0].Worker != "kreacher" {
		t.Fatalf("pruned %v, problems %v: want dobby skipped, kreacher pruned", pruned, problems)
	}
	if got := remaining(t, w); len(got) != 1 {
		t.Fatalf("dobby's run deleted despite unreadable tasks.json")
	}
}

func TestPruneRemovesLeftoverTrash(t *testing.T) {
	h := home.Home{Dir: t.TempDir()}
	w := h.Worker("dobby")
	mkRun(t, w, "2026-01-01-00-00-00-aaaa")
	trash := filepath.Join(w.Runs(), trashPrefix+"2025-01-01-00-00-00-zzzz")
	os.MkdirAll(filepath.Join(trash, "x"), 0o755)
	Prune(h, PruneOptions{Keep: 10})
	if _, err := os.Stat(trash); !os.IsNotExist(err) {
		t.Fatalf("trash from a crashed prune still there")
	}
}

func TestResolveRunPrefixAcrossWorkers(t *testing.T) {
	h := home.Home{Dir: t.TempDir()}
	os.MkdirAll(h.Data(), 0o700)
	mkRun(t, h.Worker("dobby"), "2026-01-01-00-00-00-aaaa")
	mkRun(t, h.Worker("kreacher"), "2026-01-01-00-00-00-aabb")
	e, err := Resolve(h, "2026-01-01-00-00-00-aab")
	if err != nil || e.Worker != "kreacher" {
		t.Fatalf("unique prefix: %v %v", e, err)
	}
	if _, err := Resolve(h, "2026-01-01-00-00-00-aa"); err == nil {
		t.Fatal("ambiguous prefix accepted")
	}
	if _, err := Resolve(h, "2027"); err == nil {
		t.Fatal("unknown prefix accepted")
	}
}

func FuzzParseSince(f *testing.F) {
	for _, s := range []string{"2026-11-29T19:00:00Z", "2026-11-29 19:00", "2026-11-29", "36h", "7d", "-1d", "1e9d", "", "d"} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseSince(s, now, nil)
		if _, aerr := ParseAge(s); aerr == nil && (err != nil || got.After(now)) {
			t.Fatalf("age %q: %v, %v: an age is never in the future", s, got, err)
		}
	})
}

func FuzzParseRecall(f *testing.F) {
	f.Add([]byte(`{"format":1,"parts":[{"part":"role","source":"x","why":"y"}]}`))
	f.Add([]byte(`{"format":2}`))
	f.Add([]byte(`{"format":1,"parts":[1,2]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ParseRecall("recall.json", data)
	})
}
