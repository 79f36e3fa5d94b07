package tms

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

func fire(t *testing.T, p *Partition) *FireReport {
	t.Helper()
	r, err := p.FireTemplates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTemplateFiresOnceWithTaskAndCursorInOneLine(t *testing.T) {
	p, c := open(t, newHome(t, "dobby"), "dobby")
	c.Set(time.Date(2026, 11, 29, 1, 30, 0, 0, time.UTC))
	if _, err := p.AddTemplate(ctx, NewTemplate{ID: "nightly", Cron: "CRON_TZ=UTC 0 2 * * *", Text: "tidy", Overlap: OverlapAllow}); err != nil {
		t.Fatal(err)
	}
	if r := fire(t, p); len(r.Fired) != 0 {
		t.Fatalf("fired before its time: %+v", r)
	}
	act := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	c.Set(act.Add(5 * time.Minute))
	r := fire(t, p)
	want := home.FiredTaskID(act, "dobby", "nightly")
	if len(r.Fired) != 1 || r.Fired[0] != want {
		t.Fatalf("fired %v, want %s", r.Fired, want)
	}
	if r := fire(t, p); len(r.Fired) != 0 {
		t.Fatalf("fired twice: %+v", r)
	}
	j := mustJournal(t, p)
	l := j[len(j)-1]
	if l.Event != EvFired || len(l.Records) != 2 || l.Records[0].Task.Kind != KindRecurring ||
		!l.Records[0].Task.Slot.Equal(act) || !l.Records[1].Template.Cursor.Equal(act) {
		t.Fatalf("fired line = %+v", l)
	}
	mustClean(t, p)
}

func TestTemplateOverlapForbidSkipsWhileTaskPending(t *testing.T) {
	p, c := open(t, newHome(t, "dobby"), "dobby")
	c.Set(time.Date(2026, 11, 29, 0, 30, 0, 0, time.UTC))
	p.AddTemplate(ctx, NewTemplate{ID: "hourly", Cron: "@hourly", Text: "x"})
	c.Set(time.Date(2026, 11, 29, 1, 0, 1, 0, time.UTC))
	if r := fire(t, p); len(r.Fired) != 1 {
		t.Fatalf("first: %+v", r)
	}
	c.Set(time.Date(2026, 11, 29, 2, 0, 1, 0, time.UTC))
	if r := fire(t, p); len(r.Fired) != 0 || r.Skipped != 1 {
		t.Fatalf("second: %+v", r)
	}
	j := mustJournal(t, p)
	if l := j[len(j)-1]; l.Event != EvSkipped || l.Reason != "overlap" || l.Version == 0 {
		t.Fatalf("line = %+v", l)
	}
	tpl := mustRead(t, p).Template("hourly")
	if !tpl.Cursor.Equal(time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)) {
		t.Fatalf("cursor = %v", tpl.Cursor)
	}
}

func TestTemplateOverlapAllowFiresRegardless(t *testing.T) {
	p, c := open(t, newHome(t, "dobby"), "dobby")
	c.Set(time.Date(2026, 11, 29, 0, 30, 0, 0, time.UTC))
	p.AddTemplate(ctx, NewTemplate{ID: "hourly", Cron: "@hourly", Text: "x", Overlap: OverlapAllow})
	for h := 1; h <= 2; h++ {
		c.Set(time.Date(2026, 11, 29, h, 0, 1, 0, time.UTC))
		if r := fire(t, p); len(r.Fired) != 1 {
			t.Fatalf("hour %d: %+v", h, r)
		}
	}
}

func TestTemplateWeekDowntimeCatchUpLatestFiresOneAndSkipsMissed(t *testing.T) {
	p, c := open(t, newHome(t, "dobby"), "dobby")
	c.Set(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	p.AddTemplate(ctx, NewTemplate{ID: "daily", Cron: "CRON_TZ=UTC 0 3 * * *", Text: "x"})
	c.Set(time.Date(2026, 11, 8, 12, 0, 0, 0, time.UTC)) // 7 activations missed
	r := fire(t, p)
	if len(r.Fired) != 1 || r.Fired[0] != home.FiredTaskID(time.Date(2026, 11, 8, 3, 0, 0, 0, time.UTC), "dobby", "daily") {
		t.Fatalf("fired = %v", r.Fired)
	}
	j := mustJournal(t, p)
	sk, fl := j[len(j)-2], j[len(j)-1]
	if sk.Event != EvSkipped || sk.Missed != 6 || sk.Version != 0 || fl.Event != EvFired || fl.Missed != 6 {
		t.Fatalf("lines = %+v / %+v", sk, fl)
	}
}

func TestTemplateCatchUpNoneFiresNothing(t *testing.T) {
	p, c := open(t, newHome(t, "dobby"), "dobby")
	c.Set(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	p.AddTemplate(ctx, NewTemplate{ID: "daily", Cron: "CRON_TZ=UTC 0 3 * * *", Text: "x", CatchUp: "none"})
	c.Set(time.Date(2026, 11, 4, 12, 0, 0, 0, time.UTC))
	if r := fire(t, p); len(r.Fired) != 0 || r.Skipped != 1 {
		t.Fatalf("report = %+v", r)
	}
	c.Set(time.Date(2026, 11, 5, 3, 0, 30, 0, time.UTC))
	if r := fire(t, p); len(r.Fired) != 1 {
		t.Fatalf("next activation: %+v", r)
	}
}

func TestTemplateWindowSkipsLateActivation(t *testing.T) {
	p, c := open(t, newHome(t, "dobby"), "dobby")
	c.Set(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	p.AddTemplate(ctx, NewTemplate{ID: "daily", Cron: "CRON_TZ=UTC 0 3 * * *", Text: "x", Window: "1h"})
	c.Set(time.Date(2026, 11, 1, 5, 0, 0, 0, time.UTC))
	if r := fire(t, p); len(r.Fired) != 0 || r.Skipped != 1 {
		t.Fatalf("report = %+v", r)
	}
	j := mustJournal(t, p)
	if l := j[len(j)-1]; l.Reason != "window" || l.Version == 0 {
		t.Fatalf("line = %+v", l)
	}
}

func TestTemplateClockBackwardsFiresNothingTwice(t *testing.T) {
	p, c := open(t, newHome(t, "dobby"), "dobby")
	c.Set(time.Date(2026, 11, 1, 0, 30, 0, 0, time.UTC))
	p.AddTemplate(ctx, NewTemplate{ID: "h", Cron: "@hourly", Text: "x", Overlap: OverlapAllow})
	c.Set(time.Date(2026, 11, 1, 3, 0, 5, 0, time.UTC))
	fire(t, p)
	n := len(mustRead(t, p).Tasks)
	c.Set(time.Date(2026, 11, 1, 1, 0, 5, 0, time.UTC)) // the clock jumps back two hours
	if r := fire(t, p); len(r.Fired) != 0 {
		t.Fatalf("fired after a backwards jump: %+v", r)
	}
	c.Set(time.Date(2026, 11, 1, 3, 0, 6, 0, time.UTC))
	if r := fire(t, p); len(r.Fired) != 0 || len(mustRead(t, p).Tasks) != n {
		t.Fatalf("fired 03:00 twice: %+v", r)
	}
}

func TestHeartbeatFollowsWorkerSpec(t *testing.T) {
	h := newHome(t, "dobby")
	c := &fakeClock{t: t0}
	spec := &config.Worker{Name: "dobby", Heartbeat: 30 * time.Minute}
	p, _ := Open(h, "dobby", Options{Clock: c, Org: defaultOrg(t), Worker: spec})
	fire(t, p)
	hb := mustRead(t, p).Template(HeartbeatID)
	if hb == nil || !hb.System || hb.Cron != "@every 30m" || hb.By != ByHost || hb.Standing != Proactive {
		t.Fatalf("heartbeat = %+v", hb)
	}
	c.Add(31 * time.Minute)
	r := fire(t, p)
	if len(r.Fired) != 1 || !strings.HasSuffix(r.Fired[0], "-dobby.heartbeat") {
		t.Fatalf("fired = %+v", r)
	}
	if task, _ := p.Get(ctx, r.Fired[0]); task.Kind != KindHeartbeat {
		t.Fatalf("kind = %q", task.Kind)
	}
	v := mustRead(t, p).Version
	fire(t, p)
	if mustRead(t, p).Version != v {
		t.Fatal("an unchanged spec changed the partition")
	}
	spec.Heartbeat = time.Hour
	fire(t, p)
	if hb := mustRead(t, p).Template(HeartbeatID); hb.Cron != "@every 1h" {
		t.Fatalf("after 1h: %+v", hb)
	}
	spec.Heartbeat = 0
	fire(t, p)
	if mustRead(t, p).Template(HeartbeatID) != nil {
		t.Fatal("heartbeat off did not remove it")
	}
	if err := p.RemoveTemplate(ctx, "nope", ByOwner); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("rm unknown: %v", err)
	}
}

func TestTemplateAddRefusesMalformedCron(t *testing.T) {
	p, _ := open(t, newHome(t, "dobby"), "dobby")
	_, err := p.AddTemplate(ctx, NewTemplate{ID: "bad", Cron: "61 * * * *", Text: "x"})
	if !errors.Is(err, errs.ErrUsage) {
		t.Fatalf("err = %v", err)
	}
	if _, err := p.AddTemplate(ctx, NewTemplate{ID: HeartbeatID, Cron: "@hourly", Text: "x"}); !errors.Is(err, errs.ErrUsage) {
		t.Fatalf("heartbeat id: %v", err)
	}
	p.AddTemplate(ctx, NewTemplate{ID: "ok", Cron: "@hourly", Text: "x"})
	if _, err := p.AddTemplate(ctx, NewTemplate{ID: "ok", Cron: "@hourly", Text: "x"}); !errors.Is(err, errs.ErrConflict) {
		t.Fatalf("duplicate: %v", err)
	}
}

// TestTemplateFiresInTheHostZoneNotTZ: a spec without CRON_TZ fires at
// its time in the org's host zone, whatever the process's TZ (time.Local)
// says (docs/tasks.md, "Host-local time").
func TestTemplateFiresInTheHostZoneNotTZ(t *testing.T) {
	berlin, err1 := time.LoadLocation("Europe/Berlin")
	tokyo, err2 := time.LoadLocation("Asia/Tokyo")
	if err1 != nil || err2 != nil {
		t.Skip("no zoneinfo")
	}
	old := time.Local
	time.Local = tokyo // the TZ of whoever runs the dispatcher
	defer func() { time.Local = old }()
	p, c := open(t, newHome(t, "dobby"), "dobby")
	p.Org.Dispatch.Zone = berlin
	c.Set(time.Date(2026, 11, 29, 0, 30, 0, 0, time.UTC))
	if _, err := p.AddTemplate(ctx, NewTemplate{ID: "nightly", Cron: "0 2 * * *", Text: "tidy"}); err != nil {
		t.Fatal(err)
	}
	act := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC) // 02:00 CET
	c.Set(act.Add(-time.Second))
	if r := fire(t, p); len(r.Fired) != 0 {
		t.Fatalf("fired early: %+v", r)
	}
	c.Set(act.Add(time.Second))
	if r := fire(t, p); len(r.Fired) != 1 || r.Fired[0] != home.FiredTaskID(act, "dobby", "nightly") {
		t.Fatalf("fired %+v, want the 02:00 Berlin activation", r)
	}
	acts, s, err := PreviewTemplate("0 2 * * *", act, 1, p.Zone())
	if err != nil || s.Location() != berlin || !acts[0].At.Equal(act.Add(24*time.Hour)) {
		t.Fatalf("preview %v %v %v", acts, s, err)
	}
}
