package tms

import (
	"testing"

	"github.com/roster-sh/roster/lib/runs"
)

// TestShowFinishedTaskCarriesItsEnding: a finished task shown from the
// journal comes with how it ended: a cancel's why, a failed run's
// evidence; a live task has no ending.
func TestShowFinishedTaskCarriesItsEnding(t *testing.T) {
	p, _ := open(t, newHome(t, "dobby"), "dobby")
	a := mustAdd(t, p, NewTask{Text: "a"})
	if _, end, err := p.ShowEnded(ctx, a.ID); err != nil || end != nil {
		t.Fatalf("live task: ending %+v, %v; want none", end, err)
	}
	if _, err := p.Cancel(ctx, a.ID, "no longer needed", ByOwner); err != nil {
		t.Fatal(err)
	}
	task, end, err := p.ShowEnded(ctx, a.ID)
	if err != nil || task.State != Canceled || end == nil || end.Event != EvCanceled || end.Reason != "no longer needed" || end.By != ByOwner {
		t.Fatalf("canceled: %+v, ending %+v, %v", task, end, err)
	}
	b := mustAdd(t, p, NewTask{Text: "b"})
	run := claim(t, p, b.ID)
	if _, err := p.Attest(ctx, b.ID, run, runs.Evidence{Exit: 3, Report: "fail", Reason: "tests red", Note: "n"}); err != nil {
		t.Fatal(err)
	}
	task, end, err = p.ShowEnded(ctx, b.ID)
	if err != nil || task.State != Failed || end == nil || end.Evidence == nil ||
		end.Evidence.Exit != 3 || end.Evidence.Reason != "tests red" || end.Evidence.Report != "fail" || len(end.Records) != 0 {
		t.Fatalf("failed: %+v, ending %+v, %v", task, end, err)
	}
}
