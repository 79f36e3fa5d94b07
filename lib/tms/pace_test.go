package tms

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
)

// [budget] proactive_starts: a worker that started its pace of proactive
// runs in the last hour has its proactive work late (owner work is not),
// with due saying why and when it is due again; the hour rolls, across
// midnight too.
func TestProactiveStartsArePaced(t *testing.T) {
	h := newHome(t, "dobby")
	p, c := open(t, h, "dobby")
	p.Org.Budget.Starts = 3
	now := time.Date(2026, 11, 30, 0, 20, 0, 0, time.Local)
	c.Set(now)
	own := mustAdd(t, p, NewTask{Text: "owner"})
	pro := mustAdd(t, p, NewTask{Text: "pro", Standing: Proactive})
	for i, ago := range []time.Duration{50 * time.Minute, 30 * time.Minute, 10 * time.Minute, 90 * time.Minute} {
		at := now.Add(-ago)
		run := home.NewRunID(at)
		rec := &runs.Record{ID: run, Worker: "dobby", Standing: Proactive, Kind: KindFiled, StartedAt: at}
		if i != 2 { // the newest is still live
			end := at.Add(time.Minute)
			rec.EndedAt, rec.Cost.WallSeconds = &end, 60
		}
		os.MkdirAll(p.W.Run(run), 0o700)
		if err := runs.WriteRecord(p.W.Run(run), rec); err != nil {
			t.Fatal(err)
		}
	}
	// An owner run in the hour does not count.
	run := home.NewRunID(now.Add(-5 * time.Minute))
	os.MkdirAll(p.W.Run(run), 0o700)
	runs.WriteRecord(p.W.Run(run), &runs.Record{ID: run, Worker: "dobby", Standing: Owner, StartedAt: now.Add(-5 * time.Minute)})

	r, err := p.Due(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Claimable) != 1 || r.Claimable[0].ID != own.ID {
		t.Fatalf("claimable = %+v", r.Claimable)
	}
	want := "late (paced: 3 proactive starts in the last hour (proactive_starts = 3), next at 00:30:00)"
	for _, e := range r.Entries {
		if e.ID == pro.ID && (e.Status != StateLate || e.Why != want) {
			t.Fatalf("proactive = %+v", e.Eligibility)
		}
	}
	if !r.Next.Equal(now.Add(10 * time.Minute)) {
		t.Fatalf("next = %v, want the oldest start's hour end", r.Next)
	}
	// Box time counts today's runs only: the live one's 10 minutes.
	if r.Budget.Used != 10*time.Minute {
		t.Fatalf("used = %v", r.Budget.Used)
	}
	c.Set(now.Add(11 * time.Minute))
	if r, _ = p.Due(ctx); len(r.Claimable) != 2 {
		t.Fatalf("the oldest start left the hour: %+v", r.Entries)
	}
	// proactive_starts = 0 paces nothing.
	c.Set(now)
	p.Org.Budget.Starts = 0
	if r, _ = p.Due(ctx); len(r.Claimable) != 2 {
		t.Fatalf("unpaced: %+v", r.Entries)
	}
}

// [budget] proactive_tokens spent today: proactive work (a relay among
// it) waits late instead of being started to have its calls refused;
// owner work runs.
func TestProactiveTokensSpentIsLate(t *testing.T) {
	h := newHome(t, "dobby")
	p, c := open(t, h, "dobby")
	p.Org.Budget.Tokens = 1000
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.Local)
	c.Set(now)
	own := mustAdd(t, p, NewTask{Text: "owner", Kind: KindRelay, Standing: Owner, Channel: "team:alice"})
	pro := mustAdd(t, p, NewTask{Text: "pro", Kind: KindRelay, Standing: Proactive, Channel: "team:bob"})
	r, _ := p.Due(ctx)
	if len(r.Claimable) != 2 {
		t.Fatalf("nothing spent yet: claimable = %+v", r.Claimable)
	}
	at := now.Add(-time.Hour)
	run := home.NewRunID(at)
	end := at.Add(time.Minute)
	rec := &runs.Record{ID: run, Worker: "dobby", Standing: Proactive, Kind: KindRelay, StartedAt: at, EndedAt: &end}
	rec.Cost.InputTokens, rec.Cost.OutputTokens, rec.Cost.ModelCalls = 900, 100, 1
	os.MkdirAll(p.W.Run(run), 0o700)
	if err := runs.WriteRecord(p.W.Run(run), rec); err != nil {
		t.Fatal(err)
	}
	r, err := p.Due(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Claimable) != 1 || r.Claimable[0].ID != own.ID {
		t.Fatalf("claimable = %+v", r.Claimable)
	}
	for _, e := range r.Entries {
		if e.ID == pro.ID && (e.Status != StateLate || !strings.Contains(e.Why, "1000 model tokens used of 1000")) {
			t.Fatalf("proactive = %+v", e.Eligibility)
		}
	}
}
