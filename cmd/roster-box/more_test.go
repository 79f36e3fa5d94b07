package main

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runc/libcontainer"

	"github.com/roster-sh/roster/lib/box"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

func TestPid1ReapsOrphansAndForwardsSignals(t *testing.T) {
	f := newFixture(t, job, "")
	f.setJob(`trap 'echo got-term; exit 0' TERM
( sh -c 'sleep 0.1' & )
sleep 1
echo zombies=$(cat /proc/[0-9]*/stat 2>/dev/null | grep -c ') Z ')
kill -TERM 1
sleep 30 & wait`)
	rec, _ := f.dispatch(tms.NewTask{Text: "orphans"})
	out := f.transcript(rec.ID)
	if !strings.Contains(out, "zombies=0") || !strings.Contains(out, "got-term") || rec.Ended != "done" {
		t.Fatalf("ended %s, transcript:\n%s", rec.Ended, out)
	}
}

func TestIdleEndsASilentBox(t *testing.T) {
	f := newFixture(t, job, `idle = "1s"`)
	f.setJob("echo working; sleep 30")
	rec, _ := f.dispatch(tms.NewTask{Text: "silent"})
	if rec.Ended != "idle" || rec.Attested != tms.AttestedFailed || !strings.Contains(rec.Evidence.Note, "no output and no action for 1s") {
		t.Fatalf("record %+v evidence %+v", rec, rec.Evidence)
	}
}

func TestCanceledClaimIsNotStarted(t *testing.T) {
	f := newFixture(t, job, "")
	f.setJob("touch ~/store/ran")
	task, run := f.claim(tms.NewTask{Text: "soon canceled"})
	if _, err := f.part.Cancel(context.Background(), task, "changed my mind", tms.ByOwner); err != nil {
		t.Fatal(err)
	}
	if code, _, errb := f.box("run", "dobby", "--task", task, "--run", run); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	rec, _ := runs.ReadRecord(f.w.Run(run))
	if rec.Attested != tms.AttestedCanceled || rec.Evidence.Note != "claim gone before start" {
		t.Fatalf("record %+v", rec)
	}
	if _, err := os.Stat(f.w.Store() + "/ran"); err == nil {
		t.Fatal("the box ran for a canceled claim")
	}
}

func TestCanceledDuringTheRunIsRecordedCanceled(t *testing.T) {
	f := newFixture(t, job, "")
	f.setJob("roster-task complete; sleep 30")
	task, run := f.claim(tms.NewTask{Text: "canceled midway"})
	done := make(chan struct{})
	go func() { f.box("run", "dobby", "--task", task, "--run", run); close(done) }()
	waitFor(t, func() bool { return box.Running(run) })
	if _, err := f.part.Cancel(context.Background(), task, "stop", tms.ByOwner); err != nil {
		t.Fatal(err)
	}
	// What `roster-task cancel` does next: end the box. In-process here, so
	// the supervisor's SIGTERM handler is reached through kill's signal.
	if code, _, errb := f.box("kill", run); code != 0 {
		t.Fatalf("kill: %d %s", code, errb)
	}
	<-done
	rec, _ := runs.ReadRecord(f.w.Run(run))
	if rec.Attested != tms.AttestedCanceled || rec.Ended != "error" {
		t.Fatalf("record %+v", rec)
	}
	got, _ := f.part.Show(context.Background(), task)
	if got.State != tms.Canceled {
		t.Fatalf("task state %s, want canceled (unchanged by the run)", got.State)
	}
}

func TestBoxStartWaitsForAnExclusiveStoreLock(t *testing.T) {
	f := newFixture(t, job, "")
	dir, err := fsx.OpenDir(f.w.Locks())
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	lock, err := fsx.OpenLockFile(dir, "store")
	if err != nil {
		t.Fatal(err)
	}
	if err := fsx.Flock(context.Background(), lock, false, 0); err != nil { // a restore holds it
		t.Fatal(err)
	}
	done := make(chan int)
	go func() { code, _, _ := f.box("run", "dobby", "--", "true"); done <- code }()
	var run string
	waitFor(t, func() bool {
		ents, _ := os.ReadDir(f.w.Runs())
		if len(ents) == 0 {
			return false
		}
		run = ents[0].Name()
		_, err := runs.ReadBoxInfo(f.w.Run(run))
		return err == nil
	})
	time.Sleep(300 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("the box ran while the store lock was held exclusively")
	default:
	}
	if box.Running(run) {
		t.Fatal("the container started while the store lock was held exclusively")
	}
	lock.Close()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d after the lock was released", code)
	}
}

func TestBoxDeviceCgroupAllowsOnlyTheListedDevices(t *testing.T) {
	f := newFixture(t, job, "")
	if cgroups.IsCgroup2UnifiedMode() {
		t.Skip("cgroup v2: the rules are an eBPF program, not a readable list (these machines are v1)")
	}
	f.setJob("sleep 1000")
	task, run := f.claim(tms.NewTask{Text: "devices"})
	done := make(chan struct{})
	go func() { f.box("run", "dobby", "--task", task, "--run", run); close(done) }()
	waitFor(t, func() bool { return box.Running(run) })
	c, err := libcontainer.Load(home.ContainerRoot, home.ContainerID(run))
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.State()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(st.CgroupPaths["devices"], "devices.list"))
	f.box("kill", run)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	sort.Strings(lines)
	exp := []string{"c 1:3 rwm", "c 1:5 rwm", "c 1:7 rwm", "c 1:8 rwm", "c 1:9 rwm", "c 136:* rwm", "c 5:0 rwm", "c 5:2 rwm"}
	sort.Strings(exp)
	if strings.Join(lines, "|") != strings.Join(exp, "|") {
		t.Fatalf("the box's devices.list:\n%s\nwant exactly:\n%s", data, strings.Join(exp, "\n"))
	}
}
