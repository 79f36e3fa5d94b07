package sched

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

func TestParseReadsSpecInHostZoneUnlessPrefixed(t *testing.T) {
	for _, c := range []struct {
		spec, host, zone string
		after, next      string
		elapsed          bool
	}{
		{"30 2 * * *", newYork, newYork, "2026-06-01T00:00Z", "2026-06-01T06:30Z", false},
		{"CRON_TZ=Europe/Berlin 30 2 * * *", newYork, berlin, "2026-06-01T00:00Z", "2026-06-01T00:30Z", false},
		{"TZ=Australia/Lord_Howe 30 2 * * *", newYork, lordHowe, "2026-06-01T00:00Z", "2026-06-01T16:00Z", false}, // +10:30 in June
		{"  CRON_TZ=UTC   30 2 * * *  ", berlin, "UTC", "2026-06-01T00:00Z", "2026-06-01T02:30Z", false},
		{"@hourly", berlin, berlin, "2026-06-01T00:10Z", "2026-06-01T01:00Z", true},
		{"@daily", berlin, berlin, "2026-06-01T00:10Z", "2026-06-01T22:00Z", false},
		{"@midnight", berlin, berlin, "2026-06-01T00:10Z", "2026-06-01T22:00Z", false},
		{"@weekly", "UTC", "UTC", "2026-06-01T00:10Z", "2026-06-07T00:00Z", false}, // Sunday
		{"@monthly", "UTC", "UTC", "2026-06-01T00:10Z", "2026-07-01T00:00Z", false},
		{"@yearly", "UTC", "UTC", "2026-06-01T00:10Z", "2027-01-01T00:00Z", false},
		{"@annually", "UTC", "UTC", "2026-06-01T00:10Z", "2027-01-01T00:00Z", false},
		{"@every 1s", "UTC", "UTC", "2026-06-01T00:10Z", "2026-06-01T00:10Z", true},
		{"@every 1h30m", "UTC", "UTC", "2026-06-01T00:10Z", "2026-06-01T01:30Z", true},
		{"0 * * * *", "UTC", "UTC", "2026-06-01T00:10Z", "2026-06-01T01:00Z", true},
		{"0 */3 * * *", "UTC", "UTC", "2026-06-01T00:10Z", "2026-06-01T03:00Z", true},
		{"0 1-5/2 * * *", "UTC", "UTC", "2026-06-01T00:10Z", "2026-06-01T01:00Z", true},
		{"0 ? * * *", "UTC", "UTC", "2026-06-01T00:10Z", "2026-06-01T01:00Z", true},
		{"0 1-5 * * *", "UTC", "UTC", "2026-06-01T00:10Z", "2026-06-01T01:00Z", false},
		{"0 1,13 * * mon-fri", "UTC", "UTC", "2026-06-01T00:10Z", "2026-06-01T01:00Z", false},
	} {
		t.Run(c.spec, func(t *testing.T) {
			s := parse(t, c.spec, c.host)
			if s.Location().String() != c.zone {
				t.Errorf("zone %v, want %s", s.Location(), c.zone)
			}
			if s.String() != strings.TrimSpace(c.spec) {
				t.Errorf("String() = %q", s.String())
			}
			if s.FollowsElapsedTime() != c.elapsed {
				t.Errorf("FollowsElapsedTime = %v, want %v", s.FollowsElapsedTime(), c.elapsed)
			}
			want := u(c.next)
			if c.spec == "@every 1s" {
				want = want.Add(time.Second)
			}
			if n := s.Next(u(c.after)); !n.Equal(want) {
				t.Errorf("Next(%s) = %v, want %v", c.after, n, want)
			}
		})
	}
}

func TestParseNilZoneIsHostLocal(t *testing.T) {
	s, err := Parse("0 0 * * *", nil)
	if err != nil || s.Location() != time.Local {
		t.Fatalf("Parse with nil zone: %v, %v", s, err)
	}
}

// A spec that does not parse is a usage error (exit 2) carrying the
// parser's message, never a panic.
func TestParseRefusesMalformedSpecWithParserMessage(t *testing.T) {
	for _, c := range []struct{ spec, msg string }{
		{"", "empty"},
		{"   ", "empty"},
		{"x", "expected exactly 5 fields"},
		{"* * * *", "expected exactly 5 fields"},
		{"* * * * * *", "expected exactly 5 fields"},
		{"60 * * * *", "above maximum"},
		{"* 24 * * *", "above maximum"},
		{"* * 0 * *", "below minimum"},
		{"* * * 13 *", "above maximum"},
		{"* * * * 8", "above maximum"},
		{"*/0 * * * *", "step"},
		{"5-1 * * * *", "beyond end"},
		{"a * * * *", "failed to parse"},
		{"* * * foo *", "failed to parse"},
		{"@often", "unrecognized descriptor"},
		{"@hourly 5", "unrecognized descriptor"},
		{"@every", "@every"},
		{"@every 0s", "at least 1s"},
		{"@every -5m", "at least 1s"},
		{"@every 1500ms", "whole number of seconds"},
		{"@every 10 parsecs", "@every"},
		{"TZ=", "empty zone"},
		{"TZ=UTC", "nothing after the zone"},
		{"CRON_TZ=Mars/Olympus 0 0 * * *", "unknown zone"},
		{"CRON_TZ=../../etc/passwd 0 0 * * *", "unknown zone"},
		{"CRON_TZ=/etc/localtime 0 0 * * *", "unknown zone"},
		{"CRON_TZ=UTC TZ=Europe/Berlin 0 0 * * *", "more than one zone"},
	} {
		t.Run(c.spec, func(t *testing.T) {
			s, err := Parse(c.spec, time.UTC)
			if err == nil {
				t.Fatalf("Parse(%q) accepted: %v", c.spec, s)
			}
			if !errors.Is(err, errs.ErrUsage) {
				t.Errorf("error %v is not a usage error", err)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not say %q", err, c.msg)
			}
		})
	}
}

func TestParseWindow(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{"", 0, false},
		{"0", 0, false},
		{"2h", 2 * time.Hour, false},
		{"90m", 90 * time.Minute, false},
		{"1h30m", 90 * time.Minute, false},
		{"-1h", 0, true},
		{"2 hours", 0, true},
		{"2", 0, true},
		{" 2h", 0, true},
	} {
		got, err := ParseWindow(c.in)
		if c.bad {
			if err == nil || !errors.Is(err, errs.ErrUsage) {
				t.Errorf("ParseWindow(%q) = %v, %v; want a usage error", c.in, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseWindow(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestParseCatchUp(t *testing.T) {
	for in, want := range map[string]string{"": CatchUpLatest, "latest": CatchUpLatest, "none": CatchUpNone} {
		if got, err := ParseCatchUp(in); err != nil || got != want {
			t.Errorf("ParseCatchUp(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseCatchUp("all"); !errors.Is(err, errs.ErrUsage) {
		t.Errorf("ParseCatchUp(all) = %v, want a usage error", err)
	}
}

func TestBetweenStopsAtMax(t *testing.T) {
	s := parse(t, "* * * * *", berlin)
	acts, more := s.Between(u("2026-01-01T00:00Z"), u("2026-01-01T01:00Z"), 10)
	if len(acts) != 10 || !more || !acts[9].Equal(u("2026-01-01T00:10Z")) {
		t.Errorf("Between max 10: %v more=%v", fmtTimes(acts), more)
	}
	acts, more = s.Between(u("2026-01-01T00:00Z"), u("2026-01-01T00:10Z"), 10)
	if len(acts) != 10 || more {
		t.Errorf("Between exactly 10: %d more=%v", len(acts), more)
	}
	if acts, _ := s.Between(u("2026-01-01T00:10Z"), u("2026-01-01T00:00Z"), 10); acts != nil {
		t.Errorf("Between with until before after: %v", acts)
	}
}

var fuzzSpecs = []string{
	"30 2 * * *", "0 * * * *", "*/15 1-5/2 * * mon-fri", "0 0 30 2 *", "0 12 29 2 *",
	"@hourly", "@daily", "@weekly", "@monthly", "@yearly", "@every 30m", "@every 1s", "@every 0",
	"CRON_TZ=Australia/Lord_Howe 45 1 * * *", "TZ=America/Sao_Paulo 0 0 * * *", "CRON_TZ=", "TZ=",
	"TZ=UTC", "CRON_TZ=x", "", " ", "x", "* * * * * *", "@", "@every", "@every -1h", "1,2,3-4/0 * * * *",
	"5-1 * * * *", "* * * * 8", "? ? ? ? ?", "0-59/1 0-23 1-31 1-12 0-6", "\x00", "TZ=Local * * * * *",
	"@every 9223372036s", "0 0 1 1 * extra", "CRON_TZ=Europe/Berlin @every 1h",
}

// Any string: Parse never panics, and what it accepts has a Next strictly
// after its argument (or none at all), consistent with Preview.
func FuzzParse(f *testing.F) {
	for i, s := range fuzzSpecs {
		f.Add(s, int64(1772900000+i*86400*37))
	}
	f.Add("* * * * *", int64(-62135596800))
	f.Add("@every 1s", int64(1<<62))
	ny, err := time.LoadLocation(newYork)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, spec string, at int64) {
		s, err := Parse(spec, ny)
		if err != nil {
			if !errors.Is(err, errs.ErrUsage) {
				t.Fatalf("Parse(%q) error %v is not a usage error", spec, err)
			}
			return
		}
		after := time.Unix(at, 0)
		n := s.Next(after)
		if !n.IsZero() && !n.After(after) {
			t.Fatalf("Parse(%q).Next(%v) = %v, not after it", spec, after, n)
		}
		pv := Preview(s, after, 2)
		if n.IsZero() != (len(pv) == 0) || (len(pv) > 0 && !pv[0].At.Equal(n)) {
			t.Fatalf("Parse(%q): Next %v but Preview %v", spec, n, pv)
		}
		if len(pv) == 2 && !pv[1].At.After(pv[0].At) {
			t.Fatalf("Parse(%q): Preview out of order %v", spec, pv)
		}
	})
}

func FuzzParseWindow(f *testing.F) {
	for _, s := range []string{"", "0", "2h", "90m", "1h30m", "-1h", "2 hours", "1e9h", "9223372036854775807ns", ".5s", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, err := ParseWindow(v)
		if err != nil {
			if !errors.Is(err, errs.ErrUsage) {
				t.Fatalf("ParseWindow(%q) error %v is not a usage error", v, err)
			}
			return
		}
		if d < 0 {
			t.Fatalf("ParseWindow(%q) = %v, negative", v, d)
		}
		if v == "" && d != 0 {
			t.Fatalf("ParseWindow(\"\") = %v", d)
		}
		if v != "" {
			if pd, perr := home.ParseDuration(v); perr != nil || pd != d {
				t.Fatalf("ParseWindow(%q) = %v, home.ParseDuration says %v, %v", v, d, pd, perr)
			}
		}
	})
}

// Where no zone transition is involved (UTC), the calendar rules are
// plain cron: our Next agrees with robfig's own.
func FuzzNextAgreesWithRobfigInUTC(f *testing.F) {
	for i, s := range fuzzSpecs {
		f.Add(s, int64(1772900000+i*86400*37+i*61))
	}
	f.Fuzz(func(t *testing.T, spec string, at int64) {
		if at < 0 || at > 1<<34 || strings.Contains(spec, "TZ=") || strings.Contains(spec, "@every") {
			return
		}
		s, err := Parse(spec, time.UTC)
		if err != nil {
			return
		}
		// robfig would read it in time.Local, and knows no Sunday 7.
		theirs, err := parser.Parse("CRON_TZ=UTC " + sundayAsSeven(strings.TrimSpace(spec)))
		if err != nil {
			t.Fatalf("we accept %q, robfig refuses it: %v", spec, err)
		}
		after := time.Unix(at, 0).UTC()
		want := theirs.Next(after)
		if want.IsZero() {
			return // robfig searches only five years
		}
		if got := s.Next(after); !got.Equal(want) {
			t.Fatalf("%q Next(%v) = %v, robfig says %v", spec, after, got, want)
		}
	})
}

// TestDayOfWeekSevenIsSunday: 7 in the day-of-week field is Sunday, as in
// cron (robfig/cron's range stops at 6).
func TestDayOfWeekSevenIsSunday(t *testing.T) {
	after := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) // a Monday
	for spec, want := range map[string][]time.Weekday{
		"0 2 * * 7":     {time.Sunday},
		"0 2 * * 0":     {time.Sunday},
		"0 2 * * 5-7":   {time.Friday, time.Saturday, time.Sunday},
		"0 2 * * 1-7/2": {time.Monday, time.Wednesday, time.Friday, time.Sunday},
		"0 2 * * 6,7":   {time.Saturday, time.Sunday},
		"0 2 * * 0-7":   {time.Sunday, time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday, time.Saturday},
	} {
		s, err := Parse(spec, time.UTC)
		if err != nil {
			t.Errorf("%s: %v", spec, err)
			continue
		}
		got := map[time.Weekday]bool{}
		at := after
		for i := 0; i < 14; i++ {
			at = s.Next(at)
			got[at.Weekday()] = true
		}
		if len(got) != len(want) {
			t.Errorf("%s fires on %v, want %v", spec, got, want)
		}
		for _, d := range want {
			if !got[d] {
				t.Errorf("%s never fires on %v", spec, d)
			}
		}
	}
	if _, err := Parse("0 2 * * 8", time.UTC); err == nil {
		t.Error("day-of-week 8 accepted")
	}
}
