package tms

import (
	"errors"
	"strings"
	"testing"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/outbox"
)

func TestRefusedActionIsJournaledWithItsReasonAndChangesNothing(t *testing.T) {
	p, _ := open(t, newHome(t, "dobby"), "dobby")
	a := mustAdd(t, p, NewTask{Text: "a"})
	run := claim(t, p, a.ID)
	before := mustRead(t, p).Version
	if err := p.RefuseAction(ctx, run, a.ID, 7, "", "bad action: not JSON"); err != nil {
		t.Fatal(err)
	}
	if err := p.RefuseAction(ctx, run, a.ID, 8, outbox.KindSet, strings.Repeat("x", 2000)); err != nil {
		t.Fatal(err)
	}
	lines := mustJournal(t, p)
	l1, l2 := lines[len(lines)-2], lines[len(lines)-1]
	if l1.Event != EvAction || l1.By != ByWorker || l1.Run != run || l1.Task != a.ID || l1.Version != 0 ||
		l1.Action == nil || l1.Action.N != 7 || l1.Action.Kind != ActInvalid || l1.Action.Outcome != "refused: bad action: not JSON" {
		t.Fatalf("journal line %+v action %+v", l1, l1.Action)
	}
	if l2.Action.Kind != outbox.KindSet || len(l2.Action.Outcome) > len("refused: ")+512+3 || l2.Seq != l1.Seq+1 {
		t.Fatalf("second line %+v action %+v", l2, l2.Action)
	}
	if got := mustRead(t, p).Version; got != before {
		t.Fatalf("version %d after refusals, was %d", got, before)
	}
	mustClean(t, p)
	if err := p.RefuseAction(ctx, "not-a-run", a.ID, 9, "", "x"); !errors.Is(err, errs.ErrUsage) {
		t.Fatalf("bad run id: %v", err)
	}
}
