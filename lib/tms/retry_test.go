package tms

import (
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/runs"
)

// TestRetryRefilesAFailedTaskUnderItsIdAfterTheBackoff: --retries N gives a
// task N more runs after failures, each re-filed under its id and scheduled
// after the next wait of retry_backoff (the last repeating); its dependents
// wait on it meanwhile; a success ends the retries, the N+1-th failure stands.
func TestRetryRefilesAFailedTaskUnderItsIdAfterTheBackoff(t *testing.T) {
	p, clock := open(t, newHome(t, "dobby"), "dobby")
	p.Org.Dispatch.RetryBackoff = []time.Duration{time.Minute, time.Hour}
	a := mustAdd(t, p, NewTask{Text: "a", Retries: 3})
	b := mustAdd(t, p, NewTask{Text: "b", After: []string{a.ID}})
	fail := runs.Evidence{Exit: 1, Report: "fail"}
	for i, wait := range []time.Duration{time.Minute, time.Hour, time.Hour} {
		run := claim(t, p, a.ID)
		if got, err := p.Attest(ctx, a.ID, run, fail); err != nil || got != Failed {
			t.Fatalf("attempt %d: attest = %q, %v; want failed", i+1, got, err)
		}
		task, err := p.Get(ctx, a.ID)
		if err != nil || task.State != Pending || task.Retried != i+1 {
			t.Fatalf("attempt %d: task after a failure %+v, %v; want pending, retried %d", i+1, task, err, i+1)
		}
		if want := clock.Now().Add(wait); task.ScheduledAt == nil || !task.ScheduledAt.Equal(want) {
			t.Fatalf("attempt %d: scheduled at %v, want %v", i+1, task.ScheduledAt, want)
		}
		if dep, _ := p.Get(ctx, b.ID); len(dep.Settled) != 0 {
			t.Fatalf("attempt %d: the dependent saw %v before the retries ended", i+1, dep.Settled)
		}
		clock.Add(wait)
	}
	run := claim(t, p, a.ID)
	if got, _ := p.Attest(ctx, a.ID, run, fail); got != Failed {
		t.Fatalf("last attempt: %q", got)
	}
	if _, err := p.Get(ctx, a.ID); err == nil {
		t.Fatal("the task is still live after its last retry failed")
	}
	if dep, _ := p.Get(ctx, b.ID); dep.Settled[a.ID] != Failed {
		t.Fatalf("dependent settled %v, want %s failed", dep.Settled, a.ID)
	}
	hist, err := p.Attempts(a.ID)
	if err != nil || len(hist) != 7 || hist[1].Event != EvRetrying || hist[6].Event != EvFailed {
		t.Fatalf("history %+v, %v; want failed/retrying x3 then failed", hist, err)
	}

	// A success ends it; a reclaim's third loss is a failure that retries.
	c := mustAdd(t, p, NewTask{Text: "c", Retries: 1})
	run = claim(t, p, c.ID)
	p.Attest(ctx, c.ID, run, fail)
	clock.Add(time.Minute)
	run = claim(t, p, c.ID)
	if got, _ := p.Attest(ctx, c.ID, run, good); got != Completed {
		t.Fatalf("retry that works: %q", got)
	}
	if _, err := p.Get(ctx, c.ID); err == nil {
		t.Fatal("a completed retry stays live")
	}
}

// TestTemplateEnableHasNoCatchUpBurst: a disabled template fires nothing;
// enabling it moves its cursor to now, so the activations it missed never
// fire, and the next one does.
func TestTemplateEnableHasNoCatchUpBurst(t *testing.T) {
	p, clock := open(t, newHome(t, "dobby"), "dobby")
	if _, err := p.AddTemplate(ctx, NewTemplate{ID: "hourly", Cron: "0 * * * *", Text: "tick", CatchUp: "latest"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.EnableTemplate(ctx, "hourly", false, ByOwner); err != nil {
		t.Fatal(err)
	}
	clock.Add(5 * time.Hour)
	if rep, err := p.FireTemplates(ctx); err != nil || len(rep.Fired) != 0 {
		t.Fatalf("disabled template fired %v (%v)", rep, err)
	}
	if changed, err := p.EnableTemplate(ctx, "hourly", true, ByOwner); err != nil || !changed {
		t.Fatal(changed, err)
	}
	if rep, err := p.FireTemplates(ctx); err != nil || len(rep.Fired) != 0 {
		t.Fatalf("enabling fired the missed activations: %v (%v)", rep, err)
	}
	clock.Add(time.Hour)
	rep, err := p.FireTemplates(ctx)
	if err != nil || len(rep.Fired) != 1 {
		t.Fatalf("the next activation after enable: %v (%v), want one", rep, err)
	}
	f, _ := p.Read(ctx)
	if l := f.Template("hourly").Last; l == nil || l.Task != rep.Fired[0] || l.State != Pending {
		t.Fatalf("last = %+v, want the fired task, pending", l)
	}
}

// TestSetCannotResetRetries: a worker's set never changes a task's
// retries or the retries used (it could retry a failing task forever): a
// new value is refused, an omitted one keeps the old.
func TestSetCannotResetRetries(t *testing.T) {
	p, _ := open(t, newHome(t, "dobby"), "dobby")
	a := mustAdd(t, p, NewTask{Text: "a", Retries: 2})
	run := claim(t, p, a.ID)
	p.Attest(ctx, a.ID, run, runs.Evidence{Exit: 1, Report: "fail"})
	for _, c := range []struct {
		edit    func(*Task)
		refused bool
	}{{func(x *Task) { x.Retried = 0 }, false}, {func(x *Task) { x.Retries = 50 }, true}, {func(x *Task) { x.Retried = 2 }, true}} {
		in := schedule(t, p)
		for i := range in.Tasks {
			if in.Tasks[i].ID == a.ID {
				c.edit(&in.Tasks[i])
			}
		}
		_, err := set(t, p, in)
		if c.refused {
			refusals(t, err)
		}
		if got, _ := p.Get(ctx, a.ID); got.Retried != 1 || got.Retries != 2 {
			t.Fatalf("after a set: retries %d, retried %d; want 2, 1", got.Retries, got.Retried)
		}
	}
}
