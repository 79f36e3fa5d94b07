package main

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/snap"
	"github.com/roster-sh/roster/lib/tms"
)

// TestSupervisorKilledAtTheRunsEndLosesNothing kills a box's supervisor
// -9 at a random instant after the box's command has done its work: while
// the command exits, the supervisor records the run, attests, or takes
// the post-run snapshot (the box writes 200 files, so the snapshot has
// work to do). After each kill: every run.json, tasks.json, the journal
// and every snapshot manifest parse, fsck is clean, no task finished
// twice; the dispatcher reaps and reclaims, and in the end every task
// completed exactly once, every run has ended (a run killed after its
// attestation, which no claim refers to, by the dispatcher's orphan pass),
// and the next take leaves no partial snapshot.
func TestSupervisorKilledAtTheRunsEndLosesNothing(t *testing.T) {
	e := newEnv(t, "")
	e.worker("dobby", `mkdir -p ~/store/bulk; i=0; while [ $i -lt 200 ]; do echo "$ROSTER_RUN $i" > ~/store/bulk/f$i; i=$((i+1)); done; touch ~/store/done-$ROSTER_RUN; roster-task complete`)
	const n = 40
	var ids []string
	for i := 0; i < n; i++ {
		ids = append(ids, e.add("dobby", "task "+strings.Repeat("y", i+1)))
	}
	w := e.h.Worker("dobby")
	d := e.start("--poll", "100ms")
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	killed := map[string]bool{}
	kills, start := 0, time.Now()
	for e.events("dobby", tms.EvCompleted, "")+e.events("dobby", tms.EvFailed, "") < n {
		if time.Since(start) > 10*time.Minute {
			t.Fatalf("gave up: %d of %d completed\n%s", e.events("dobby", tms.EvCompleted, ""), n, d.logText())
		}
		live, _ := runs.LiveBoxes(w)
		// One kill per task: a task whose box is lost three times fails,
		// as it should (tms.MaxReclaims).
		if len(live) != 1 || killed[live[0].Task] {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		b := live[0]
		if _, err := os.Stat(filepath.Join(w.Store(), "done-"+b.Run)); err != nil {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		time.Sleep(time.Duration(rng.Intn(300)) * time.Millisecond)
		killed[b.Task] = true
		if syscall.Kill(b.PID, syscall.SIGKILL) == nil {
			kills++
		}
		supervisorChecks(t, e, ids, kills)
	}
	d.c.Process.Signal(syscall.SIGTERM)
	d.wait(t, time.Minute)
	if code := e.start("--until-idle").wait(t, 5*time.Minute); code != 0 {
		t.Fatalf("--until-idle: exit %d", code)
	}
	supervisorChecks(t, e, ids, kills)
	for _, id := range ids {
		if got := e.events("dobby", tms.EvCompleted, id); got != 1 {
			t.Errorf("task %s completed %d times", id, got)
		}
	}
	list, err := runs.List(e.h, runs.Filter{Workers: []string{"dobby"}})
	if err != nil {
		t.Fatal(err)
	}
	unreaped := 0
	for _, r := range list {
		if r.Record != nil && r.Record.EndedAt != nil {
			continue
		}
		// A supervisor killed after its attestation leaves a run no claim
		// refers to: the last dispatcher's orphan pass must have reaped it.
		if b, err := runs.ReadBoxInfo(r.Dir); err == nil && b.Alive() {
			t.Errorf("run %s: its box is still live", r.ID)
			continue
		}
		unreaped++
		t.Errorf("run %s has not ended: no dispatcher reaped it (%+v)", r.ID, r.Record)
	}
	e.run("roster-snap", "take", "dobby")
	ents, _ := os.ReadDir(w.Snapshots())
	for _, en := range ents {
		if strings.HasPrefix(en.Name(), ".partial-") {
			t.Errorf("a partial snapshot is left: %s", en.Name())
		}
	}
	t.Logf("%d supervisors killed in %v (%d runs, %d reclaims, %d runs left un-ended)", kills, time.Since(start).Round(time.Millisecond), len(list), e.events("dobby", tms.EvReclaimed, ""), unreaped)
}

func supervisorChecks(t *testing.T, e *env, ids []string, kills int) {
	t.Helper()
	w := e.h.Worker("dobby")
	if out, err := e.cmd("roster-task", "fsck", "dobby").CombinedOutput(); err != nil {
		t.Fatalf("kill %d: fsck: %v\n%s", kills, err, out)
	}
	finished := map[string]int{}
	for _, l := range e.journal("dobby") { // fails the test on a bad line
		switch l.Event {
		case tms.EvCompleted, tms.EvFailed, tms.EvCanceled:
			finished[l.Task]++
		}
	}
	for _, id := range ids {
		if finished[id] > 1 {
			t.Fatalf("kill %d: task %s finished %d times", kills, id, finished[id])
		}
	}
	list, _ := runs.List(e.h, runs.Filter{Workers: []string{"dobby"}})
	for _, r := range list {
		if r.Err != nil {
			t.Fatalf("kill %d: run %s: %v", kills, r.ID, r.Err)
		}
	}
	snaps, _ := filepath.Glob(filepath.Join(w.Snapshots(), "2*"))
	for _, s := range snaps {
		data, err := os.ReadFile(filepath.Join(s, "manifest.jsonl"))
		if err != nil {
			t.Fatalf("kill %d: %v", kills, err)
		}
		if _, err := snap.ParseManifest(data); err != nil {
			t.Fatalf("kill %d: %s: %v", kills, s, err)
		}
	}
}
