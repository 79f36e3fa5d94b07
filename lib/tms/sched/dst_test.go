package sched

import (
	"slices"
	"testing"
	"time"
)

func TestSpringForwardGapFiresOnceAfterGap(t *testing.T) {
	checkWindows(t, []window{
		// 02:30 does not exist on Mar 8: it fires once, at 03:00 EDT.
		{zone: newYork, spec: "30 2 * * *", after: "2026-03-07T00:00Z", until: "2026-03-10T00:00Z",
			want:  us("2026-03-07T07:30Z", "2026-03-08T07:00Z", "2026-03-09T06:30Z"),
			marks: map[string]string{"2026-03-08T07:00Z": MarkGap}},
		// Three nonexistent wall times collapse into one activation.
		{zone: newYork, spec: "*/20 2 * * *", after: "2026-03-07T00:00Z", until: "2026-03-10T00:00Z",
			want: us("2026-03-07T07:00Z", "2026-03-07T07:20Z", "2026-03-07T07:40Z",
				"2026-03-08T07:00Z",
				"2026-03-09T06:00Z", "2026-03-09T06:20Z", "2026-03-09T06:40Z"),
			marks: map[string]string{"2026-03-08T07:00Z": MarkGap}},
		// Hourly: 02:00 EST does not exist; it and 03:00 EDT are one instant.
		{zone: newYork, spec: "0 * * * *", after: "2026-03-08T05:30Z", until: "2026-03-08T09:30Z",
			want:  us("2026-03-08T06:00Z", "2026-03-08T07:00Z", "2026-03-08T08:00Z", "2026-03-08T09:00Z"),
			marks: map[string]string{"2026-03-08T07:00Z": MarkGap}},
		{zone: berlin, spec: "30 2 * * *", after: "2026-03-28T00:00Z", until: "2026-03-31T00:00Z",
			want:  us("2026-03-28T01:30Z", "2026-03-29T01:00Z", "2026-03-30T00:30Z"),
			marks: map[string]string{"2026-03-29T01:00Z": MarkGap}},
		{zone: berlin, spec: "CRON_TZ=Europe/Berlin 0 2 * * 0", after: "2026-03-20T00:00Z", until: "2026-04-06T00:00Z",
			want:  us("2026-03-22T01:00Z", "2026-03-29T01:00Z", "2026-04-05T00:00Z"),
			marks: map[string]string{"2026-03-29T01:00Z": MarkGap}},
		// Lord Howe skips 02:00-02:30: 02:15 and 02:00 fire at 02:30 LHDT.
		{zone: lordHowe, spec: "15 2 * * *", after: "2026-10-02T12:00Z", until: "2026-10-05T12:00Z",
			want:  us("2026-10-02T15:45Z", "2026-10-03T15:30Z", "2026-10-04T15:15Z"),
			marks: map[string]string{"2026-10-03T15:30Z": MarkGap}},
		{zone: lordHowe, spec: "0 2 * * *", after: "2026-10-02T12:00Z", until: "2026-10-05T12:00Z",
			want:  us("2026-10-02T15:30Z", "2026-10-03T15:30Z", "2026-10-04T15:00Z"),
			marks: map[string]string{"2026-10-03T15:30Z": MarkGap}},
		// 02:30 itself exists on Oct 4 (the first instant after the gap).
		{zone: lordHowe, spec: "30 2 * * *", after: "2026-10-02T12:00Z", until: "2026-10-05T12:00Z",
			want: us("2026-10-02T16:00Z", "2026-10-03T15:30Z", "2026-10-04T15:30Z")},
		// Sao Paulo 2018-11-04: midnight did not exist; fires at 01:00 BRST.
		{zone: saoPaulo, spec: "0 0 * * *", after: "2018-11-02T12:00Z", until: "2018-11-05T12:00Z",
			want:  us("2018-11-03T03:00Z", "2018-11-04T03:00Z", "2018-11-05T02:00Z"),
			marks: map[string]string{"2018-11-04T03:00Z": MarkGap}},
		{zone: saoPaulo, spec: "@daily", after: "2018-11-02T12:00Z", until: "2018-11-05T12:00Z",
			want:  us("2018-11-03T03:00Z", "2018-11-04T03:00Z", "2018-11-05T02:00Z"),
			marks: map[string]string{"2018-11-04T03:00Z": MarkGap}},
		{zone: saoPaulo, spec: "30 0 * * *", after: "2018-11-02T12:00Z", until: "2018-11-05T12:00Z",
			want:  us("2018-11-03T03:30Z", "2018-11-04T03:00Z", "2018-11-05T02:30Z"),
			marks: map[string]string{"2018-11-04T03:00Z": MarkGap}},
	})
}

func TestFallBackFixedHourFiresOnce(t *testing.T) {
	checkWindows(t, []window{
		// 01:30 happens at 05:30Z (EDT) and 06:30Z (EST): only the first fires.
		{zone: newYork, spec: "30 1 * * *", after: "2026-10-31T00:00Z", until: "2026-11-03T00:00Z",
			want:  us("2026-10-31T05:30Z", "2026-11-01T05:30Z", "2026-11-02T06:30Z"),
			marks: map[string]string{"2026-11-01T05:30Z": MarkOverlapFirst}},
		// A list of hours is fixed too.
		{zone: newYork, spec: "0,30 1 * * *", after: "2026-11-01T00:00Z", until: "2026-11-02T00:00Z",
			want: us("2026-11-01T05:00Z", "2026-11-01T05:30Z"),
			marks: map[string]string{"2026-11-01T05:00Z": MarkOverlapFirst,
				"2026-11-01T05:30Z": MarkOverlapFirst}},
		// And a range without a step.
		{zone: newYork, spec: "15 1-2 * * *", after: "2026-11-01T00:00Z", until: "2026-11-01T12:00Z",
			want:  us("2026-11-01T05:15Z", "2026-11-01T07:15Z"),
			marks: map[string]string{"2026-11-01T05:15Z": MarkOverlapFirst}},
		{zone: berlin, spec: "30 2 * * *", after: "2026-10-24T00:00Z", until: "2026-10-27T00:00Z",
			want:  us("2026-10-24T00:30Z", "2026-10-25T00:30Z", "2026-10-26T01:30Z"),
			marks: map[string]string{"2026-10-25T00:30Z": MarkOverlapFirst}},
		{zone: lordHowe, spec: "45 1 * * *", after: "2026-04-03T12:00Z", until: "2026-04-06T12:00Z",
			want:  us("2026-04-03T14:45Z", "2026-04-04T14:45Z", "2026-04-05T15:15Z"),
			marks: map[string]string{"2026-04-04T14:45Z": MarkOverlapFirst}},
		// 01:15 is before Lord Howe's half-hour overlap: no repeat at all.
		{zone: lordHowe, spec: "15 1 * * *", after: "2026-04-04T12:00Z", until: "2026-04-05T12:00Z",
			want: us("2026-04-04T14:15Z")},
		{zone: saoPaulo, spec: "30 23 * * *", after: "2019-02-15T12:00Z", until: "2019-02-18T12:00Z",
			want:  us("2019-02-16T01:30Z", "2019-02-17T01:30Z", "2019-02-18T02:30Z"),
			marks: map[string]string{"2019-02-17T01:30Z": MarkOverlapFirst}},
	})
}

func TestFallBackHourlyFollowsElapsedTime(t *testing.T) {
	overlapNY := map[string]string{"2026-11-01T05:00Z": MarkOverlapFirst, "2026-11-01T06:00Z": MarkOverlapRepeat}
	checkWindows(t, []window{
		// Every real hour: 01:00 EDT and 01:00 EST both fire.
		{zone: newYork, spec: "0 * * * *", after: "2026-11-01T03:30Z", until: "2026-11-01T08:30Z",
			want: every("2026-11-01T03:00Z", "2026-11-01T08:30Z", time.Hour), marks: overlapNY},
		{zone: newYork, spec: "@hourly", after: "2026-11-01T03:30Z", until: "2026-11-01T08:30Z",
			want: every("2026-11-01T03:00Z", "2026-11-01T08:30Z", time.Hour), marks: overlapNY},
		// A step in the hour field follows elapsed time too.
		{zone: newYork, spec: "30 1/2 * * *", after: "2026-11-01T04:00Z", until: "2026-11-01T09:00Z",
			want:  us("2026-11-01T05:30Z", "2026-11-01T06:30Z", "2026-11-01T08:30Z"),
			marks: map[string]string{"2026-11-01T05:30Z": MarkOverlapFirst, "2026-11-01T06:30Z": MarkOverlapRepeat}},
		{zone: berlin, spec: "*/30 * * * *", after: "2026-10-25T00:00Z", until: "2026-10-25T02:00Z",
			want: us("2026-10-25T00:30Z", "2026-10-25T01:00Z", "2026-10-25T01:30Z", "2026-10-25T02:00Z"),
			marks: map[string]string{"2026-10-25T00:30Z": MarkOverlapFirst,
				"2026-10-25T01:00Z": MarkOverlapRepeat, "2026-10-25T01:30Z": MarkOverlapRepeat}},
		{zone: berlin, spec: "15 */2 * * *", after: "2026-10-24T23:00Z", until: "2026-10-25T04:00Z",
			want:  us("2026-10-25T00:15Z", "2026-10-25T01:15Z", "2026-10-25T03:15Z"),
			marks: map[string]string{"2026-10-25T00:15Z": MarkOverlapFirst, "2026-10-25T01:15Z": MarkOverlapRepeat}},
		// Lord Howe repeats 01:30-02:00: quarter hours keep every real 15 minutes.
		{zone: lordHowe, spec: "*/15 * * * *", after: "2026-04-04T14:00Z", until: "2026-04-04T15:45Z",
			want: every("2026-04-04T14:00Z", "2026-04-04T15:45Z", 15*time.Minute),
			marks: map[string]string{"2026-04-04T14:30Z": MarkOverlapFirst, "2026-04-04T14:45Z": MarkOverlapFirst,
				"2026-04-04T15:00Z": MarkOverlapRepeat, "2026-04-04T15:15Z": MarkOverlapRepeat}},
		// On the hour: 01:00 is not repeated there, 02:00 LHST comes 90 real minutes later.
		{zone: lordHowe, spec: "0 * * * *", after: "2026-04-04T12:30Z", until: "2026-04-04T17:00Z",
			want: us("2026-04-04T13:00Z", "2026-04-04T14:00Z", "2026-04-04T15:30Z", "2026-04-04T16:30Z")},
		{zone: saoPaulo, spec: "0 * * * *", after: "2019-02-17T00:30Z", until: "2019-02-17T04:30Z",
			want:  us("2019-02-17T01:00Z", "2019-02-17T02:00Z", "2019-02-17T03:00Z", "2019-02-17T04:00Z"),
			marks: map[string]string{"2019-02-17T01:00Z": MarkOverlapFirst, "2019-02-17T02:00Z": MarkOverlapRepeat}},
	})
}

func TestEveryFollowsElapsedTime(t *testing.T) {
	checkWindows(t, []window{
		{zone: newYork, spec: "@every 30m", after: "2026-11-01T04:45Z", until: "2026-11-01T07:15Z",
			want: every("2026-11-01T04:30Z", "2026-11-01T07:15Z", 30*time.Minute),
			marks: map[string]string{"2026-11-01T05:00Z": MarkOverlapFirst, "2026-11-01T05:30Z": MarkOverlapFirst,
				"2026-11-01T06:00Z": MarkOverlapRepeat, "2026-11-01T06:30Z": MarkOverlapRepeat}},
		// No gap mark: elapsed time has no gap.
		{zone: newYork, spec: "@every 1h", after: "2026-03-08T05:30Z", until: "2026-03-08T08:30Z",
			want: us("2026-03-08T06:00Z", "2026-03-08T07:00Z", "2026-03-08T08:00Z")},
		{zone: berlin, spec: "@every 20m", after: "2026-03-29T00:30Z", until: "2026-03-29T01:30Z",
			want: us("2026-03-29T00:40Z", "2026-03-29T01:00Z", "2026-03-29T01:20Z")},
		{zone: lordHowe, spec: "@every 30m", after: "2026-10-03T14:45Z", until: "2026-10-03T16:15Z",
			want: us("2026-10-03T15:00Z", "2026-10-03T15:30Z", "2026-10-03T16:00Z")},
		{zone: lordHowe, spec: "@every 30m", after: "2026-04-04T14:15Z", until: "2026-04-04T15:45Z",
			want:  us("2026-04-04T14:30Z", "2026-04-04T15:00Z", "2026-04-04T15:30Z"),
			marks: map[string]string{"2026-04-04T14:30Z": MarkOverlapFirst, "2026-04-04T15:00Z": MarkOverlapRepeat}},
		{zone: saoPaulo, spec: "@every 1h", after: "2018-11-04T01:30Z", until: "2018-11-04T04:30Z",
			want: us("2018-11-04T02:00Z", "2018-11-04T03:00Z", "2018-11-04T04:00Z")},
		// Anchored at the Unix epoch: a day is 16 periods of 90m, so each
		// UTC day starts on the grid; 2026-01-01T00:00Z is 20454 days = 2922
		// weeks after the epoch, a multiple of 7m.
		{zone: newYork, spec: "@every 90m", after: "2026-03-08T00:00Z", until: "2026-03-08T05:00Z",
			want: us("2026-03-08T01:30Z", "2026-03-08T03:00Z", "2026-03-08T04:30Z")},
		{zone: berlin, spec: "@every 7m", after: "2025-12-31T23:50Z", until: "2026-01-01T00:10Z",
			want: us("2025-12-31T23:53Z", "2026-01-01T00:00Z", "2026-01-01T00:07Z")},
	})
}

// The anchor does not depend on where a search starts: a restart that
// computes from a different cursor lands on the same instants.
func TestEveryAnchorIsStableAcrossRestarts(t *testing.T) {
	s := parse(t, "@every 7m", newYork)
	base, _ := s.Between(u("2026-05-01T00:00Z"), u("2026-05-01T03:00Z"), 100)
	for _, start := range []time.Time{u("2026-05-01T00:00Z").Add(13 * time.Second), u("2026-05-01T00:03Z"), base[4]} {
		got, _ := s.Between(start, u("2026-05-01T03:00Z"), 100)
		var want []time.Time
		for _, b := range base {
			if b.After(start) {
				want = append(want, b)
			}
		}
		sameTimes(t, "from "+start.String(), got, want)
	}
}

func TestNextNeverActivates(t *testing.T) {
	s := parse(t, "0 0 30 2 *", berlin)
	if n := s.Next(u("2026-01-01T00:00Z")); !n.IsZero() {
		t.Errorf("Next = %v, want zero (February 30 never comes)", n)
	}
	if p := Preview(s, u("2026-01-01T00:00Z"), 3); len(p) != 0 {
		t.Errorf("Preview = %v, want none", p)
	}
}

// Leap days come every four years: Next finds one 3+ years ahead.
func TestNextFindsRareDays(t *testing.T) {
	s := parse(t, "0 12 29 2 *", "UTC")
	if n := s.Next(u("2024-03-01T00:00Z")); !n.Equal(u("2028-02-29T12:00Z")) {
		t.Errorf("Next = %v, want 2028-02-29T12:00Z", n)
	}
}

// Day of month and day of week: either matches when both are restricted,
// both must when one is "*" (cron's rule, as robfig has it).
func TestDayFieldsFollowCronRules(t *testing.T) {
	checkWindows(t, []window{
		// 2026-06-01 is a Monday; the 13th is a Saturday.
		{zone: "UTC", spec: "0 9 13 * 1", after: "2026-06-01T10:00Z", until: "2026-06-16T00:00Z",
			want: us("2026-06-08T09:00Z", "2026-06-13T09:00Z", "2026-06-15T09:00Z")},
		{zone: "UTC", spec: "0 9 * * 1", after: "2026-06-01T10:00Z", until: "2026-06-16T00:00Z",
			want: us("2026-06-08T09:00Z", "2026-06-15T09:00Z")},
		{zone: "UTC", spec: "0 9 13 * *", after: "2026-06-01T10:00Z", until: "2026-06-16T00:00Z",
			want: us("2026-06-13T09:00Z")},
		{zone: "UTC", spec: "0 0 1 jan,jul *", after: "2026-01-01T00:00Z", until: "2027-01-01T00:00Z",
			want: us("2026-07-01T00:00Z", "2027-01-01T00:00Z")},
	})
}

// Samoa skipped 2011-12-30 entirely (-10 to +14 at midnight): the whole
// day is a gap, and its noon fires once, as the next day begins.
func TestWholeDaySkippedFiresOnceAfterIt(t *testing.T) {
	checkWindows(t, []window{
		{zone: "Pacific/Apia", spec: "0 12 * * *", after: "2011-12-28T00:00Z", until: "2011-12-31T12:00Z",
			want:  us("2011-12-28T22:00Z", "2011-12-29T22:00Z", "2011-12-30T10:00Z", "2011-12-30T22:00Z"),
			marks: map[string]string{"2011-12-30T10:00Z": MarkGap}},
	})
}

// `template next` prints the local and UTC columns from Preview.
func TestPreviewShowsLocalTimeAndMarks(t *testing.T) {
	s := parse(t, "30 2 * * *", newYork)
	var got []string
	for _, a := range Preview(s, u("2026-03-07T12:00Z"), 2) {
		got = append(got, a.Local.Format("2006-01-02 15:04 MST")+" "+a.At.Format(time.RFC3339)+" "+a.Mark)
	}
	want := []string{"2026-03-08 03:00 EDT 2026-03-08T07:00:00Z gap", "2026-03-09 02:30 EDT 2026-03-09T06:30:00Z "}
	if !slices.Equal(got, want) {
		t.Errorf("Preview:\n got  %q\n want %q", got, want)
	}
	if p := Preview(s, u("2026-03-07T12:00Z"), 0); p != nil {
		t.Errorf("Preview n=0: %v", p)
	}
}
