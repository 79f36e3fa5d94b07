package main

import (
	"context"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/box"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

func TestBoxThatNeverStartedClaimsNoExitStatus(t *testing.T) {
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
	defer lock.Close()
	if err := fsx.Flock(context.Background(), lock, false, 0); err != nil { // a restore holds it
		t.Fatal(err)
	}
	defer func(d time.Duration) { box.StoreLockWait = d }(box.StoreLockWait)
	box.StoreLockWait = 200 * time.Millisecond
	task, run := f.claim(tms.NewTask{Text: "never starts"})
	code, _, errb := f.box("run", "dobby", "--task", task, "--run", run)
	if code != 11 {
		t.Fatalf("exit %d, want 11 (store busy): %s", code, errb)
	}
	rec, err := runs.ReadRecord(f.w.Run(run))
	if err != nil {
		t.Fatal(err)
	}
	ev := rec.Evidence
	if rec.Ended != "error" || rec.ExitCode != nil || ev == nil || ev.Exit != -1 {
		t.Fatalf("ended %q exit_code %v evidence %+v; want error, no exit code, evidence exit -1", rec.Ended, rec.ExitCode, ev)
	}
	if rec.Snapshot != "not taken: box did not start" {
		t.Fatalf("snapshot %q", rec.Snapshot)
	}
	if rec.Attested != tms.AttestedFailed {
		t.Fatalf("attested %q", rec.Attested)
	}
}

func TestReapedRunClaimsNoExitStatus(t *testing.T) {
	f := newFixture(t, job, "")
	_, run := f.claim(tms.NewTask{Text: "supervisor gone"})
	if err := box.CreateRunDir(f.w.Run(run), false); err != nil {
		t.Fatal(err)
	}
	if err := runs.WriteRecord(f.w.Run(run), &runs.Record{ID: run, Worker: "dobby", StartedAt: time.Now(), Actions: []runs.ActionRecord{}}); err != nil {
		t.Fatal(err)
	}
	if code, _, errb := f.box("reap", run); code != 0 {
		t.Fatalf("reap: exit %d: %s", code, errb)
	}
	rec, err := runs.ReadRecord(f.w.Run(run))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Ended != "error" || rec.Evidence == nil || rec.Evidence.Exit != -1 || rec.Evidence.Note != "supervisor lost" {
		t.Fatalf("ended %q evidence %+v", rec.Ended, rec.Evidence)
	}
}
