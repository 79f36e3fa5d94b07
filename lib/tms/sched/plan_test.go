package sched

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// planCase is one call of Plan and what it must decide.
type planCase struct {
	name, zone, spec string
	cursor, now      string
	window           time.Duration
	catchUp          string
	fire             string // "" = nothing fires
	skipped          []Skip
	missed, due      int
	newCursor        string
}

func skip(at, reason string, count int) Skip { return Skip{At: u(at), Reason: reason, Count: count} }

func checkPlans(t *testing.T, cases []planCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := parse(t, c.spec, c.zone)
			d := Plan(s, u(c.cursor), u(c.now), c.window, c.catchUp)
			switch {
			case c.fire == "" && d.Fire != nil:
				t.Errorf("fired %v, want nothing", d.Fire)
			case c.fire != "" && (d.Fire == nil || !d.Fire.Equal(u(c.fire))):
				t.Errorf("fired %v, want %s", d.Fire, c.fire)
			}
			if !slices.EqualFunc(d.Skipped, c.skipped, func(a, b Skip) bool {
				return a.At.Equal(b.At) && a.Reason == b.Reason && a.Count == b.Count
			}) {
				t.Errorf("skipped %v, want %v", d.Skipped, c.skipped)
			}
			if d.Missed != c.missed || d.Due != c.due {
				t.Errorf("missed %d due %d, want missed %d due %d", d.Missed, d.Due, c.missed, c.due)
			}
			if !d.NewCursor.Equal(u(c.newCursor)) {
				t.Errorf("new cursor %v, want %s", d.NewCursor, c.newCursor)
			}
			// Planning again with the new cursor at the same instant (a
			// restart right after the write) does nothing more.
			again := Plan(s, d.NewCursor, u(c.now), c.window, c.catchUp)
			if again.Fire != nil || len(again.Skipped) != 0 || !again.NewCursor.Equal(d.NewCursor) {
				t.Errorf("planning again fired %v skipped %v cursor %v", again.Fire, again.Skipped, again.NewCursor)
			}
		})
	}
}

func TestClockBackwardsFiresNothingTwice(t *testing.T) {
	checkPlans(t, []planCase{
		// The clock is set back behind the cursor: nothing fires, the cursor stays.
		{name: "behind the cursor", zone: newYork, spec: "0 * * * *",
			cursor: "2026-11-01T06:00Z", now: "2026-11-01T04:10Z", newCursor: "2026-11-01T06:00Z"},
		{name: "back to the cursor", zone: berlin, spec: "30 2 * * *",
			cursor: "2026-10-25T00:30Z", now: "2026-10-25T00:30Z", newCursor: "2026-10-25T00:30Z"},
		// Going back over the fall-back hour in Lord Howe: 01:45 LHDT fired,
		// the clock shows 01:40 LHST (after 01:45 LHDT in real time), nothing.
		{name: "over a repeated wall time", zone: lordHowe, spec: "45 1 * * *",
			cursor: "2026-04-04T14:45Z", now: "2026-04-04T15:10Z", newCursor: "2026-04-04T14:45Z"},
		{name: "to before a skipped midnight", zone: saoPaulo, spec: "0 0 * * *",
			cursor: "2018-11-04T03:00Z", now: "2018-11-03T23:00Z", newCursor: "2018-11-04T03:00Z"},
	})
	// A run loop whose clock jumps back two hours across New York's fall-back
	// overlap and then runs on: every hour fires exactly once.
	for _, z := range []struct{ zone, spec, from, peak, back, to string }{
		{newYork, "0 * * * *", "2026-11-01T03:00Z", "2026-11-01T07:30Z", "2026-11-01T05:10Z", "2026-11-01T10:00Z"},
		{berlin, "*/30 * * * *", "2026-10-24T22:00Z", "2026-10-25T02:20Z", "2026-10-24T23:50Z", "2026-10-25T04:00Z"},
		{lordHowe, "*/15 * * * *", "2026-04-04T13:00Z", "2026-04-04T15:50Z", "2026-04-04T14:05Z", "2026-04-04T17:00Z"},
		{saoPaulo, "0 * * * *", "2018-11-03T23:00Z", "2018-11-04T05:00Z", "2018-11-04T01:30Z", "2018-11-04T08:00Z"},
	} {
		t.Run("loop/"+z.zone, func(t *testing.T) {
			s := parse(t, z.spec, z.zone)
			var nows []time.Time
			for n := u(z.from); !n.After(u(z.peak)); n = n.Add(time.Minute) {
				nows = append(nows, n)
			}
			for n := u(z.back); !n.After(u(z.to)); n = n.Add(time.Minute) {
				nows = append(nows, n)
			}
			fired := runLoop(t, s, u(z.from), nows, CatchUpLatest)
			want, _ := s.Between(u(z.from), u(z.to), 1000)
			sameTimes(t, "fired", fired, want)
		})
	}
}

// runLoop plays a dispatcher: at each instant of nows it plans with the
// cursor the previous step returned, and collects what fired. It fails on
// a missed activation (steps are small) or a repeat.
func runLoop(t *testing.T, s *Schedule, cursor time.Time, nows []time.Time, catchUp string) []time.Time {
	t.Helper()
	var fired []time.Time
	seen := map[time.Time]bool{}
	for _, now := range nows {
		d := Plan(s, cursor, now, 0, catchUp)
		if d.NewCursor.Before(cursor) {
			t.Fatalf("at %v the cursor moved back from %v to %v", now, cursor, d.NewCursor)
		}
		if d.Missed != 0 || len(d.Skipped) != 0 {
			t.Errorf("at %v: missed %d skipped %v", now, d.Missed, d.Skipped)
		}
		if d.Fire != nil {
			if seen[*d.Fire] {
				t.Errorf("at %v: %v fired twice", now, *d.Fire)
			}
			seen[*d.Fire] = true
			fired = append(fired, *d.Fire)
		}
		cursor = d.NewCursor
	}
	return fired
}

func TestClockForwardCatchUpLatest(t *testing.T) {
	checkPlans(t, []planCase{
		// Five hours at once across the repeated hour: 04, 05, 06, 07, 08Z.
		{name: "new york fall-back", zone: newYork, spec: "0 * * * *",
			cursor: "2026-11-01T03:00Z", now: "2026-11-01T08:10Z",
			fire: "2026-11-01T08:00Z", skipped: []Skip{skip("2026-11-01T07:00Z", SkipCatchUp, 4)},
			missed: 4, due: 5, newCursor: "2026-11-01T08:00Z"},
		// 01:00Z (03:00 CEST, 02:00 collapsed into it), 02:00Z, 03:00Z.
		{name: "berlin spring-forward", zone: berlin, spec: "0 * * * *",
			cursor: "2026-03-29T00:00Z", now: "2026-03-29T03:20Z",
			fire: "2026-03-29T03:00Z", skipped: []Skip{skip("2026-03-29T02:00Z", SkipCatchUp, 2)},
			missed: 2, due: 3, newCursor: "2026-03-29T03:00Z"},
		// 01:00 LHDT 14:00Z, 02:00 LHST 15:30Z, 03:00 LHST 16:30Z.
		{name: "lord howe fall-back", zone: lordHowe, spec: "0 * * * *",
			cursor: "2026-04-04T13:00Z", now: "2026-04-04T17:00Z",
			fire: "2026-04-04T16:30Z", skipped: []Skip{skip("2026-04-04T15:30Z", SkipCatchUp, 2)},
			missed: 2, due: 3, newCursor: "2026-04-04T16:30Z"},
		{name: "sao paulo missing midnight", zone: saoPaulo, spec: "0 0 * * *",
			cursor: "2018-11-03T03:00Z", now: "2018-11-05T10:00Z",
			fire: "2018-11-05T02:00Z", skipped: []Skip{skip("2018-11-04T03:00Z", SkipCatchUp, 1)},
			missed: 1, due: 2, newCursor: "2018-11-05T02:00Z"},
		// One activation passed during the jump: no catch-up, it just fires.
		{name: "one activation", zone: newYork, spec: "30 2 * * *",
			cursor: "2026-03-07T07:30Z", now: "2026-03-08T07:40Z",
			fire: "2026-03-08T07:00Z", due: 1, newCursor: "2026-03-08T07:00Z"},
	})
}

func TestWeekOfDowntimeCatchUpLatestOneFireMissedN(t *testing.T) {
	checkPlans(t, []planCase{
		// Mar 26-28 01:00Z, Mar 29 01:00Z (02:00 in the gap), Mar 30-Apr 1 00:00Z.
		{name: "berlin", zone: berlin, spec: "0 2 * * *",
			cursor: "2026-03-25T01:00Z", now: "2026-04-01T10:00Z",
			fire: "2026-04-01T00:00Z", skipped: []Skip{skip("2026-03-31T00:00Z", SkipCatchUp, 6)},
			missed: 6, due: 7, newCursor: "2026-04-01T00:00Z"},
		{name: "new york", zone: newYork, spec: "30 2 * * *",
			cursor: "2026-03-05T07:30Z", now: "2026-03-12T12:00Z",
			fire: "2026-03-12T06:30Z", skipped: []Skip{skip("2026-03-11T06:30Z", SkipCatchUp, 6)},
			missed: 6, due: 7, newCursor: "2026-03-12T06:30Z"},
		// Apr 3-5 at 14:45Z (Apr 5 only at the first 01:45), Apr 6-8 at 15:15Z.
		{name: "lord howe", zone: lordHowe, spec: "45 1 * * *",
			cursor: "2026-04-01T14:45Z", now: "2026-04-08T00:00Z",
			fire: "2026-04-07T15:15Z", skipped: []Skip{skip("2026-04-06T15:15Z", SkipCatchUp, 5)},
			missed: 5, due: 6, newCursor: "2026-04-07T15:15Z"},
		{name: "sao paulo", zone: saoPaulo, spec: "0 0 * * *",
			cursor: "2018-11-01T03:00Z", now: "2018-11-08T12:00Z",
			fire: "2018-11-08T02:00Z", skipped: []Skip{skip("2018-11-07T02:00Z", SkipCatchUp, 6)},
			missed: 6, due: 7, newCursor: "2018-11-08T02:00Z"},
		// 7 days of half hours: 336 activations.
		{name: "every 30m", zone: newYork, spec: "@every 30m",
			cursor: "2026-03-05T00:00Z", now: "2026-03-12T00:10Z",
			fire: "2026-03-12T00:00Z", skipped: []Skip{skip("2026-03-11T23:30Z", SkipCatchUp, 335)},
			missed: 335, due: 336, newCursor: "2026-03-12T00:00Z"},
		// Hourly across New York's fall-back: 7*24 + 1 real hours.
		{name: "hourly", zone: newYork, spec: "0 * * * *",
			cursor: "2026-10-29T00:00Z", now: "2026-11-05T00:30Z",
			fire: "2026-11-05T00:00Z", skipped: []Skip{skip("2026-11-04T23:00Z", SkipCatchUp, 167)},
			missed: 167, due: 168, newCursor: "2026-11-05T00:00Z"},
	})
}

func TestCatchUpNone(t *testing.T) {
	checkPlans(t, []planCase{
		{name: "berlin week", zone: berlin, spec: "0 2 * * *", catchUp: CatchUpNone,
			cursor: "2026-03-25T01:00Z", now: "2026-04-01T10:00Z",
			skipped: []Skip{skip("2026-04-01T00:00Z", SkipCatchUp, 7)},
			missed:  7, due: 7, newCursor: "2026-04-01T00:00Z"},
		// ... and the next activation fires as usual.
		{name: "berlin next day", zone: berlin, spec: "0 2 * * *", catchUp: CatchUpNone,
			cursor: "2026-04-01T00:00Z", now: "2026-04-02T00:01Z",
			fire: "2026-04-02T00:00Z", due: 1, newCursor: "2026-04-02T00:00Z"},
		{name: "new york fall-back hours", zone: newYork, spec: "0 * * * *", catchUp: CatchUpNone,
			cursor: "2026-11-01T03:00Z", now: "2026-11-01T08:10Z",
			skipped: []Skip{skip("2026-11-01T08:00Z", SkipCatchUp, 5)},
			missed:  5, due: 5, newCursor: "2026-11-01T08:00Z"},
		{name: "lord howe", zone: lordHowe, spec: "45 1 * * *", catchUp: CatchUpNone,
			cursor: "2026-04-01T14:45Z", now: "2026-04-08T00:00Z",
			skipped: []Skip{skip("2026-04-07T15:15Z", SkipCatchUp, 6)},
			missed:  6, due: 6, newCursor: "2026-04-07T15:15Z"},
		{name: "sao paulo", zone: saoPaulo, spec: "0 0 * * *", catchUp: CatchUpNone,
			cursor: "2018-11-03T03:00Z", now: "2018-11-05T10:00Z",
			skipped: []Skip{skip("2018-11-05T02:00Z", SkipCatchUp, 2)},
			missed:  2, due: 2, newCursor: "2018-11-05T02:00Z"},
		// A single activation since the cursor is not a catch-up: it fires
		// (bound its lateness with a window).
		{name: "single activation", zone: saoPaulo, spec: "0 0 * * *", catchUp: CatchUpNone,
			cursor: "2018-11-03T03:00Z", now: "2018-11-04T09:00Z",
			fire: "2018-11-04T03:00Z", due: 1, newCursor: "2018-11-04T03:00Z"},
		{name: "single activation with window", zone: saoPaulo, spec: "0 0 * * *", catchUp: CatchUpNone,
			cursor: "2018-11-03T03:00Z", now: "2018-11-04T09:00Z", window: time.Hour,
			skipped: []Skip{skip("2018-11-04T03:00Z", SkipWindow, 1)},
			due:     1, newCursor: "2018-11-04T03:00Z"},
	})
}

func TestWindowSkipsLate(t *testing.T) {
	checkPlans(t, []planCase{
		{name: "three hours late, window 2h", zone: berlin, spec: "0 2 * * *", window: 2 * time.Hour,
			cursor: "2026-03-31T00:00Z", now: "2026-04-01T03:00Z",
			skipped: []Skip{skip("2026-04-01T00:00Z", SkipWindow, 1)},
			due:     1, newCursor: "2026-04-01T00:00Z"},
		{name: "exactly the window late fires", zone: berlin, spec: "0 2 * * *", window: 3 * time.Hour,
			cursor: "2026-03-31T00:00Z", now: "2026-04-01T03:00Z",
			fire: "2026-04-01T00:00Z", due: 1, newCursor: "2026-04-01T00:00Z"},
		{name: "no window, a day late fires", zone: berlin, spec: "0 2 * * *",
			cursor: "2026-03-31T00:00Z", now: "2026-04-01T23:59Z",
			fire: "2026-04-01T00:00Z", due: 1, newCursor: "2026-04-01T00:00Z"},
		// Lateness is real time from the instant after the gap (07:00Z), not
		// from the nonexistent 02:30 wall time.
		{name: "gap lateness 90m, window 1h", zone: newYork, spec: "30 2 * * *", window: time.Hour,
			cursor: "2026-03-07T07:30Z", now: "2026-03-08T08:30Z",
			skipped: []Skip{skip("2026-03-08T07:00Z", SkipWindow, 1)},
			due:     1, newCursor: "2026-03-08T07:00Z"},
		{name: "gap lateness 90m, window 2h", zone: newYork, spec: "30 2 * * *", window: 2 * time.Hour,
			cursor: "2026-03-07T07:30Z", now: "2026-03-08T08:30Z",
			fire: "2026-03-08T07:00Z", due: 1, newCursor: "2026-03-08T07:00Z"},
		// Downtime: the latest is within the window and fires, the rest are missed.
		{name: "downtime, latest in window", zone: lordHowe, spec: "45 1 * * *", window: 2 * time.Hour,
			cursor: "2026-04-01T14:45Z", now: "2026-04-07T16:00Z",
			fire: "2026-04-07T15:15Z", skipped: []Skip{skip("2026-04-06T15:15Z", SkipCatchUp, 5)},
			missed: 5, due: 6, newCursor: "2026-04-07T15:15Z"},
		// Downtime, the latest too late as well: nothing fires.
		{name: "downtime, latest past window", zone: saoPaulo, spec: "0 0 * * *", window: 2 * time.Hour,
			cursor: "2018-11-01T03:00Z", now: "2018-11-08T12:00Z",
			skipped: []Skip{skip("2018-11-07T02:00Z", SkipCatchUp, 6), skip("2018-11-08T02:00Z", SkipWindow, 1)},
			missed:  6, due: 7, newCursor: "2018-11-08T02:00Z"},
	})
}

func TestNewTemplateZeroCursorFiresNothing(t *testing.T) {
	s := parse(t, "* * * * *", berlin)
	now := u("2026-05-01T10:00Z").Add(1500 * time.Millisecond)
	d := Plan(s, time.Time{}, now, 0, "")
	if d.Fire != nil || len(d.Skipped) != 0 || !d.NewCursor.Equal(u("2026-05-01T10:00Z").Add(time.Second)) {
		t.Errorf("zero cursor: %+v", d)
	}
	// From the creation time on, the first activation after it fires.
	d = Plan(s, d.NewCursor, u("2026-05-01T10:01Z"), 0, "")
	if d.Fire == nil || !d.Fire.Equal(u("2026-05-01T10:01Z")) {
		t.Errorf("first activation: %+v", d)
	}
}

// Steps a fake clock minute by minute across every transition, planning
// with the cursor the previous step returned: each expected activation
// fires exactly once, none twice, none is missed, under both catch_up
// values (one activation per step is never a catch-up).
func TestRunLoopMinuteByMinuteAcrossTransitions(t *testing.T) {
	type spec struct {
		spec string
		want []time.Time
	}
	for _, tr := range []struct {
		name, zone, from, to string
		specs                []spec
	}{
		{"new york spring", newYork, "2026-03-08T04:00Z", "2026-03-08T10:00Z", []spec{
			{"30 2 * * *", us("2026-03-08T07:00Z")},
			{"30 1 * * *", us("2026-03-08T06:30Z")},
			{"0 * * * *", every("2026-03-08T04:00Z", "2026-03-08T10:00Z", time.Hour)},
			{"@every 30m", every("2026-03-08T04:00Z", "2026-03-08T10:00Z", 30*time.Minute)},
		}},
		{"new york fall", newYork, "2026-11-01T03:00Z", "2026-11-01T09:00Z", []spec{
			{"30 1 * * *", us("2026-11-01T05:30Z")},
			{"30 2 * * *", us("2026-11-01T07:30Z")},
			{"0 * * * *", every("2026-11-01T03:00Z", "2026-11-01T09:00Z", time.Hour)},
			{"@every 30m", every("2026-11-01T03:00Z", "2026-11-01T09:00Z", 30*time.Minute)},
		}},
		{"berlin spring", berlin, "2026-03-28T22:00Z", "2026-03-29T04:00Z", []spec{
			{"30 2 * * *", us("2026-03-29T01:00Z")},
			{"30 1 * * *", us("2026-03-29T00:30Z")},
			{"0 * * * *", every("2026-03-28T22:00Z", "2026-03-29T04:00Z", time.Hour)},
		}},
		{"berlin fall", berlin, "2026-10-24T22:00Z", "2026-10-25T04:00Z", []spec{
			{"30 2 * * *", us("2026-10-25T00:30Z")},
			{"0 * * * *", every("2026-10-24T22:00Z", "2026-10-25T04:00Z", time.Hour)},
			{"@every 20m", every("2026-10-24T22:00Z", "2026-10-25T04:00Z", 20*time.Minute)},
		}},
		{"lord howe spring", lordHowe, "2026-10-03T12:30Z", "2026-10-03T18:30Z", []spec{
			{"15 2 * * *", us("2026-10-03T15:30Z")},
			{"0 * * * *", us("2026-10-03T13:30Z", "2026-10-03T14:30Z", "2026-10-03T15:30Z",
				"2026-10-03T16:00Z", "2026-10-03T17:00Z", "2026-10-03T18:00Z")},
			{"@every 30m", every("2026-10-03T12:30Z", "2026-10-03T18:30Z", 30*time.Minute)},
		}},
		{"lord howe fall", lordHowe, "2026-04-04T12:00Z", "2026-04-04T18:00Z", []spec{
			{"45 1 * * *", us("2026-04-04T14:45Z")},
			{"0 * * * *", us("2026-04-04T13:00Z", "2026-04-04T14:00Z", "2026-04-04T15:30Z",
				"2026-04-04T16:30Z", "2026-04-04T17:30Z")},
			{"*/15 * * * *", every("2026-04-04T12:00Z", "2026-04-04T18:00Z", 15*time.Minute)},
		}},
		{"sao paulo spring 2018", saoPaulo, "2018-11-04T00:00Z", "2018-11-04T06:00Z", []spec{
			{"0 0 * * *", us("2018-11-04T03:00Z")},
			{"0 * * * *", us("2018-11-04T01:00Z", "2018-11-04T02:00Z", "2018-11-04T03:00Z",
				"2018-11-04T04:00Z", "2018-11-04T05:00Z", "2018-11-04T06:00Z")},
		}},
		{"sao paulo fall 2019", saoPaulo, "2019-02-16T23:00Z", "2019-02-17T05:00Z", []spec{
			{"30 23 * * *", us("2019-02-17T01:30Z")},
			{"0 0 * * *", us("2019-02-17T03:00Z")},
			{"0 * * * *", every("2019-02-16T23:00Z", "2019-02-17T05:00Z", time.Hour)},
		}},
	} {
		var nows []time.Time
		for n := u(tr.from); !n.After(u(tr.to)); n = n.Add(time.Minute) {
			nows = append(nows, n)
		}
		for _, sp := range tr.specs {
			for _, cu := range []string{CatchUpLatest, CatchUpNone} {
				t.Run(fmt.Sprintf("%s/%s/%s", tr.name, sp.spec, cu), func(t *testing.T) {
					s := parse(t, sp.spec, tr.zone)
					fired := runLoop(t, s, u(tr.from), nows, cu)
					sameTimes(t, "fired", fired, sp.want)
				})
			}
		}
	}
}
