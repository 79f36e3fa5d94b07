package tms

import (
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/config"
)

func TestAWorkerCeilingOnlyLowers(t *testing.T) {
	p := limitsPartition(t) // [ceilings] filed 30m, recurring 20m by default
	in := schedule(t, p)
	in.Tasks = append(in.Tasks, Task{Text: "forever", Ceiling: "1000h"})
	if _, err := set(t, p, in); err == nil || !strings.Contains(refusals(t, err)[0].Reason, "a worker may lower a ceiling, never raise it") {
		t.Fatalf("worker set with ceiling 1000h: %v", err)
	}
	in = schedule(t, p)
	in.Templates = append(in.Templates, Template{ID: "long", Cron: "@daily", Text: "x", Ceiling: "2h"})
	if _, err := set(t, p, in); err == nil || !strings.Contains(refusals(t, err)[0].Reason, "recurring ceiling of 20m") {
		t.Fatalf("worker template with ceiling 2h: %v", err)
	}
	in = schedule(t, p)
	in.Tasks = append(in.Tasks, Task{Text: "short", Ceiling: "5m"})
	if _, err := set(t, p, in); err != nil {
		t.Fatalf("a lower ceiling: %v", err)
	}
	in = schedule(t, p)
	in.Tasks = append(in.Tasks, Task{Text: "the owner's long one", Ceiling: "10h"})
	if _, err := p.SetTasks(ctx, in, ByOwner); err != nil {
		t.Fatalf("the owner may set any ceiling: %v", err)
	}
	// A worker's task that holds a higher ceiling anyway (written before
	// this rule) runs with its kind's.
	if d := p.CeilingOf(&Task{Kind: KindFiled, By: ByWorker, Ceiling: "1000h"}); d != 30*time.Minute {
		t.Fatalf("CeilingOf a worker's 1000h task = %s", d)
	}
	if d := p.CeilingOf(&Task{Kind: KindFiled, By: ByOwner, Ceiling: "10h"}); d != 10*time.Hour {
		t.Fatalf("CeilingOf the owner's 10h task = %s", d)
	}
}

func TestProactiveRunCeilingIsCappedByTheBudgetLeft(t *testing.T) {
	h := newHome(t, "dobby")
	org := defaultOrg(t)
	org.Budget.Proactive, org.Budget.Unlimited = 90*time.Second, false
	p, err := Open(h, "dobby", Options{Clock: &fakeClock{t: t0}, Org: org, Worker: &config.Worker{Name: "dobby", Command: []string{"/bin/true"}}})
	if err != nil {
		t.Fatal(err)
	}
	if d, capped := p.RunCeiling(&Task{Kind: KindFiled, Standing: Proactive}, t0); d != 90*time.Second || !capped {
		t.Fatalf("proactive: %s capped %v; want 1m30s by the budget", d, capped)
	}
	if d, capped := p.RunCeiling(&Task{Kind: KindFiled, Standing: Owner}, t0); d != 30*time.Minute || capped {
		t.Fatalf("owner: %s capped %v; want the kind's 30m", d, capped)
	}
	if d, _ := p.RunCeiling(&Task{Kind: KindFiled, Standing: Proactive, Ceiling: "1m"}, t0); d != time.Minute {
		t.Fatalf("a lower own ceiling: %s", d)
	}
}
