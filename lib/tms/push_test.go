package tms

import (
	"testing"

	"github.com/roster-sh/roster/lib/runs"
)

// A push is journaled as one action line (kind push, by worker, no
// version) with its refs; the outcome names the refusal's cause, not
// "atomic", and a gated ref says gated.
func TestPushIsJournaledWithItsOutcome(t *testing.T) {
	p, _ := open(t, newHome(t, "dobby"), "dobby")
	a := mustAdd(t, p, NewTask{Text: "a"})
	run := claim(t, p, a.ID)
	before := mustRead(t, p).Version
	for _, c := range []struct {
		refs []runs.GitRef
		want string
	}{
		{[]runs.GitRef{{Repo: "app", Ref: "refs/heads/roster/dobby/x", Outcome: "pushed"}}, "ok"},
		{[]runs.GitRef{{Repo: "app", Ref: "refs/heads/a", Outcome: "refused", Refusal: "atomic"},
			{Repo: "app", Ref: "refs/heads/main", Outcome: "refused", Refusal: "ref_protected"}}, "refused: ref_protected"},
		{[]runs.GitRef{{Repo: "h", Ref: "refs/heads/main", Outcome: "gated"}, {Repo: "h", Ref: "refs/heads/b", Outcome: "pushed"}}, "gated"},
	} {
		if err := p.JournalPush(ctx, run, a.ID, c.refs); err != nil {
			t.Fatal(err)
		}
		lines := mustJournal(t, p)
		l := lines[len(lines)-1]
		if l.Event != EvAction || l.By != ByWorker || l.Run != run || l.Task != a.ID || l.Version != 0 ||
			l.Action == nil || l.Action.Kind != ActPush || l.Action.Outcome != c.want || len(l.Push) != len(c.refs) || l.Push[0].Repo != c.refs[0].Repo {
			t.Fatalf("journal line %+v action %+v, want outcome %q", l, l.Action, c.want)
		}
	}
	if got := mustRead(t, p).Version; got != before {
		t.Fatalf("version %d after push lines, was %d", got, before)
	}
	mustClean(t, p)
}
