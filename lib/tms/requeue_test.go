package tms

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/roster-sh/roster/lib/errs"
)

// TestRequeueOfDeadBoxReapsFirst: requeueing a claimed task whose box is
// dead reaps its run before the task is pending again; a failed reap
// refuses (13) and leaves the task claimed.
func TestRequeueOfDeadBoxReapsFirst(t *testing.T) {
	p, _ := open(t, newHome(t, "dobby"), "dobby")
	a := mustAdd(t, p, NewTask{Text: "a"})
	run := claim(t, p, a.ID)
	writeDeadBox(t, p, run)
	_, _, err := p.RequeueReaping(ctx, a.ID, ByOwner, func(string) error { return errors.New("exit status 1") })
	if !errors.Is(err, errs.ErrConflict) || !strings.Contains(errs.HintOf(err), "roster-box reap "+run) {
		t.Fatalf("requeue with a failed reap = %v (hint %q), want 13 with a reap hint", err, errs.HintOf(err))
	}
	if got, _ := p.Get(ctx, a.ID); got.State != Claimed {
		t.Fatalf("after a failed reap the task is %s, want claimed", got.State)
	}
	var reaped []string
	task, _, err := p.RequeueReaping(ctx, a.ID, ByOwner, func(r string) error {
		if b, _ := os.ReadFile(p.W.Journal()); strings.Contains(string(b), `"requeued"`) {
			t.Error("reap ran after the requeue was journaled")
		}
		reaped = append(reaped, r)
		return nil
	})
	if err != nil || task.State != Pending || len(reaped) != 1 || reaped[0] != run {
		t.Fatalf("requeue = %+v, %v; reaped %v, want [%s]", task, err, reaped, run)
	}
}
