package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/box"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

// snapshotDir reads every file of a run folder (names and bytes).
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			got[p] = fi.ModTime().String() + "\n" + string(data)
		}
		return nil
	})
	return got
}

func TestExistingRunIsNeverOverwritten(t *testing.T) {
	f := newFixture(t, job, "")
	f.setJob("echo first; roster-task complete")
	rec, _ := f.dispatch(tms.NewTask{Text: "first"})
	before := snapshotDir(t, f.w.Run(rec.ID))
	if !strings.Contains(before[home.Transcript(f.w.Run(rec.ID))], "first") {
		t.Fatalf("no transcript: %v", before)
	}
	task, _ := f.claim(tms.NewTask{Text: "second"})
	f.setJob("echo second; roster-task complete")
	code, _, errb := f.box("run", "dobby", "--task", task, "--run", rec.ID)
	if code != 13 || !strings.Contains(errb, "run "+rec.ID+" already exists") {
		t.Fatalf("exit %d, %s; want 13 already exists", code, errb)
	}
	after := snapshotDir(t, f.w.Run(rec.ID))
	if len(after) != len(before) {
		t.Fatalf("files changed: %d before, %d after", len(before), len(after))
	}
	for p, v := range before {
		if after[p] != v {
			t.Fatalf("%s changed", p)
		}
	}
}

func TestRunIDInTheFutureIsUsage(t *testing.T) {
	f := newFixture(t, job, "")
	task, _ := f.claim(tms.NewTask{Text: "later"})
	run := home.NewRunID(time.Now().Add(time.Hour))
	code, _, errb := f.box("run", "dobby", "--task", task, "--run", run)
	if code != 2 || !strings.Contains(errb, "future") {
		t.Fatalf("exit %d, %s; want 2", code, errb)
	}
	if _, err := os.Lstat(f.w.Run(run)); err == nil {
		t.Fatal("a run folder was made")
	}
}

func TestAdhocRunIDThatClashesIsReplaced(t *testing.T) {
	f := newFixture(t, job, "")
	taken := home.NewRunID(time.Now())
	if err := os.MkdirAll(f.w.Run(taken), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(home.RunJSON(f.w.Run(taken)), []byte("{}"), 0o644)
	calls := 0
	box.NewRunID = func(t time.Time) string {
		calls++
		if calls == 1 {
			return taken
		}
		return home.NewRunID(t)
	}
	defer func() { box.NewRunID = home.NewRunID }()
	code, _, errb := f.box("run", "dobby", "--", "true")
	if code != 0 || calls != 2 {
		t.Fatalf("exit %d after %d ids: %s", code, calls, errb)
	}
	if data, _ := os.ReadFile(home.RunJSON(f.w.Run(taken))); string(data) != "{}" {
		t.Fatalf("the clashing run was overwritten: %s", data)
	}
	ents, _ := os.ReadDir(f.w.Runs())
	if len(ents) != 2 {
		t.Fatalf("runs %v, want the clashing one and a new one", ents)
	}
	for _, e := range ents {
		if e.Name() == taken {
			continue
		}
		if rec, err := runs.ReadRecord(f.w.Run(e.Name())); err != nil || rec.Kind != "adhoc" || rec.Ended != "done" {
			t.Fatalf("new run %+v, %v", rec, err)
		}
	}
}
