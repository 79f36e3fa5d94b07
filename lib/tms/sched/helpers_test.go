package sched

import (
	"slices"
	"testing"
	"time"
	_ "time/tzdata" // the zone rules come from Go's embedded tzdata, not the host's
)

// The zones the DST rules are pinned in. Expected instants in the tests are
// worked out by hand from these rules (offsets in brackets):
//
//	America/New_York 2026: EST [-5] -> EDT [-4] on Mar 8 at 02:00 EST (07:00Z);
//	  EDT -> EST on Nov 1 at 02:00 EDT (06:00Z), 01:00-02:00 repeats.
//	Europe/Berlin 2026: CET [+1] -> CEST [+2] on Mar 29 at 02:00 CET (01:00Z);
//	  CEST -> CET on Oct 25 at 03:00 CEST (01:00Z), 02:00-03:00 repeats.
//	Australia/Lord_Howe 2026 (30-minute shift): LHDT [+11] -> LHST [+10:30] on
//	  Apr 5 at 02:00 LHDT (Apr 4 15:00Z), 01:30-02:00 repeats; LHST -> LHDT on
//	  Oct 4 at 02:00 LHST (Oct 3 15:30Z), 02:00-02:30 does not exist.
//	America/Sao_Paulo 2018/19: BRT [-3] -> BRST [-2] on 2018-11-04 at 00:00
//	  (03:00Z), so that midnight did not exist; BRST -> BRT on 2019-02-17 at
//	  00:00 BRST (02:00Z), Feb 16 23:00-24:00 repeats.
const (
	newYork  = "America/New_York"
	berlin   = "Europe/Berlin"
	lordHowe = "Australia/Lord_Howe"
	saoPaulo = "America/Sao_Paulo"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// u reads a UTC instant written "2006-01-02T15:04Z".
func u(s string) time.Time {
	t, err := time.Parse("2006-01-02T15:04Z", s)
	if err != nil {
		panic(err)
	}
	return t
}

func us(ss ...string) []time.Time {
	out := make([]time.Time, len(ss))
	for i, s := range ss {
		out[i] = u(s)
	}
	return out
}

// every lists the instants start+step, start+2*step, ... up to end: what
// "follows elapsed time" means.
func every(start, end string, step time.Duration) []time.Time {
	var out []time.Time
	for t := u(start).Add(step); !t.After(u(end)); t = t.Add(step) {
		out = append(out, t)
	}
	return out
}

func parse(t *testing.T, spec, zoneName string) *Schedule {
	t.Helper()
	s, err := Parse(spec, zone(t, zoneName))
	if err != nil {
		t.Fatalf("Parse(%q): %v", spec, err)
	}
	return s
}

func fmtTimes(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.UTC().Format("2006-01-02T15:04Z")
	}
	return out
}

func sameTimes(t *testing.T, what string, got, want []time.Time) {
	t.Helper()
	if !slices.EqualFunc(got, want, time.Time.Equal) {
		t.Errorf("%s:\n got  %v\n want %v", what, fmtTimes(got), fmtTimes(want))
	}
}

// window is one table row for the activation rules: the activations of spec
// (read in zone) in (after, until] must be exactly want.
type window struct {
	zone, spec   string
	after, until string
	want         []time.Time
	marks        map[string]string // instant -> expected Preview mark (others "")
}

func checkWindows(t *testing.T, rows []window) {
	t.Helper()
	for _, r := range rows {
		t.Run(r.zone+"/"+r.spec, func(t *testing.T) {
			s := parse(t, r.spec, r.zone)
			got, more := s.Between(u(r.after), u(r.until), 1000)
			if more {
				t.Fatal("more than 1000 activations")
			}
			sameTimes(t, "Between("+r.after+", "+r.until+"]", got, r.want)
			// Preview (what `template next` prints) and Next agree with it.
			pv := Preview(s, u(r.after), len(r.want))
			for i, a := range pv {
				if i >= len(r.want) {
					break
				}
				if !a.At.Equal(r.want[i]) || a.At.Location() != time.UTC || !a.Local.Equal(a.At) || a.Local.Location() != s.Location() {
					t.Errorf("Preview[%d] = %v (local %v), want %v", i, a.At, a.Local, r.want[i])
				}
				key := a.At.Format("2006-01-02T15:04Z")
				if want := r.marks[key]; a.Mark != want {
					t.Errorf("Preview mark at %s (%s) = %q, want %q", key, a.Local.Format("15:04 MST"), a.Mark, want)
				}
			}
			prev := u(r.after)
			for i, w := range r.want {
				if n := s.Next(prev); !n.Equal(w) {
					t.Errorf("Next #%d after %v = %v, want %v", i, prev, n, w)
				}
				prev = w
			}
		})
	}
}
