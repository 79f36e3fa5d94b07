package main

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/tms"
)

// TestDispatcherKilledInALoopRunsEveryTaskOnce kills the dispatcher -9 at
// random instants, over and over, while 30 tasks flow through real boxes
// (the boxes and their supervisors are not killed: they outlive it, as
// under systemd's KillMode=process). Every task runs exactly once (its box
// appends its id to a file in the store: each id once), completes exactly
// once in the journal, and fsck is clean at the end.
func TestDispatcherKilledInALoopRunsEveryTaskOnce(t *testing.T) {
	e := newEnv(t, "[dispatch]\ncap = 3\n")
	e.worker("dobby", `echo "$ROSTER_TASK" >> ~/store/ran; sleep 1; roster-task complete`, "concurrency = 3")
	var ids []string
	for i := 0; i < 30; i++ {
		ids = append(ids, e.add("dobby", "task "+strings.Repeat("x", i)))
	}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	completed := func() int { return e.events("dobby", tms.EvCompleted, "") }
	kills, start := 0, time.Now()
	deadline := start.Add(10 * time.Minute) // a bound on a broken build, not a speed claim
	for completed() < len(ids) && time.Now().Before(deadline) {
		d := e.start("--poll", "100ms")
		time.Sleep(time.Duration(20+rng.Intn(300)) * time.Millisecond)
		d.c.Process.Signal(syscall.SIGKILL)
		<-d.exited
		kills++
		// After each kill: every file parses, fsck is clean (a journal
		// ahead of tasks.json is only a note), no task is in tasks.json
		// twice, none is lost, none completed twice.
		fsck := e.cmd("roster-task", "fsck", "dobby")
		if out, err := fsck.CombinedOutput(); err != nil {
			t.Fatalf("kill %d: fsck: %v\n%s", kills, err, out)
		}
		// The journal alone, read once (supervisors keep writing): each
		// task's last record says whether it is live.
		live := map[string]bool{}
		finished := map[string]int{}
		for _, l := range e.journal("dobby") {
			for _, r := range l.Records {
				if r.Task != nil {
					live[r.Task.ID] = !r.Removed
				}
			}
			switch l.Event {
			case tms.EvCompleted, tms.EvFailed, tms.EvCanceled:
				finished[l.Task]++
			}
		}
		for _, id := range ids {
			if n := finished[id]; n > 1 || (n == 1) == live[id] {
				t.Fatalf("kill %d: task %s finished %d times, live %v", kills, id, n, live[id])
			}
		}
	}
	// The last dispatcher runs until nothing is left (a claim whose box
	// never started is reclaimed after the start grace).
	d := e.start("--until-idle", "--poll", "100ms")
	if code := d.wait(t, 5*time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, d.logText())
	}
	data, err := os.ReadFile(filepath.Join(e.h.Worker("dobby").Store(), "ran"))
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]int{}
	for _, l := range strings.Fields(string(data)) {
		ran[l]++
	}
	for _, id := range ids {
		if ran[id] != 1 {
			t.Errorf("task %s ran %d times", id, ran[id])
		}
		if n := e.events("dobby", tms.EvCompleted, id); n != 1 {
			t.Errorf("task %s completed %d times", id, n)
		}
		if n := e.events("dobby", tms.EvFailed, id); n != 0 {
			t.Errorf("task %s failed %d times", id, n)
		}
	}
	if len(ran) != len(ids) {
		t.Errorf("%d ids ran, %d filed", len(ran), len(ids))
	}
	e.run("roster-task", "fsck", "dobby")
	t.Logf("%d dispatcher kills in %v; %d reclaims", kills, time.Since(start).Round(time.Millisecond), e.events("dobby", tms.EvReclaimed, ""))
}
