package sched

import (
	"sort"
	"time"
)

// Activation is one instant a schedule fires, as `roster-task template next`
// shows it.
type Activation struct {
	At    time.Time // the instant, UTC
	Local time.Time // the same instant in the schedule's zone
	// Mark flags the daylight-saving cases: "" (an ordinary wall time),
	// MarkGap (the wall time did not exist; fires at the first instant after
	// the gap), MarkOverlapFirst (the wall time occurs twice and this is its
	// first occurrence: fixed-hour specs fire only here), MarkOverlapRepeat
	// (the second occurrence: only elapsed-time specs fire here).
	Mark string
}

// The marks of an Activation.
const (
	MarkGap           = "gap"
	MarkOverlapFirst  = "overlap-first"
	MarkOverlapRepeat = "overlap-repeat"
)

const (
	day = 86400
	// maxOffset bounds any UTC offset a zone has ever used (LMT included),
	// so the activations of a local day lie within its wall day ± maxOffset.
	maxOffset = 17 * 3600
	// searchDays bounds Next: a calendar spec that matches nothing within
	// ten years (e.g. "0 0 30 2 *") has no next activation.
	searchDays = 3653
)

// walk calls fn with the activations in (after, until], in order, until fn
// returns false. A zero until means no upper bound (calendar specs are then
// searched searchDays ahead).
func (s *Schedule) walk(after, until time.Time, fn func(Activation) bool) {
	if after.Unix() >= maxUnix || (!until.IsZero() && until.Unix() <= minUnix) {
		return // beyond the range we compute in: nothing activates
	}
	afterSec := clampUnix(after.Unix())
	untilSec, bounded := int64(maxUnix), !until.IsZero()
	if bounded {
		untilSec = clampUnix(until.Unix())
	}
	emit := func(t int64, mark string) bool {
		at := time.Unix(t, 0).UTC()
		return fn(Activation{At: at, Local: at.In(s.loc), Mark: mark})
	}
	if s.every > 0 {
		for t := (floorDiv(afterSec, s.every) + 1) * s.every; t <= untilSec; t += s.every {
			if !emit(t, s.everyMark(t)) {
				return
			}
		}
		return
	}

	var pending []instant
	// flush emits the pending activations before `before`; false = stop.
	flush := func(before int64) bool {
		i := 0
		for ; i < len(pending) && pending[i].t < before; i++ {
			if pending[i].t > untilSec || !emit(pending[i].t, pending[i].mark) {
				return false
			}
		}
		pending = pending[i:]
		return true
	}
	_, off := time.Unix(afterSec, 0).In(s.loc).Zone()
	first := floorDiv(afterSec+int64(off), day) - 2
	for d := first; ; d++ {
		wall := d * day
		// Every activation of day d or later is at or after wall-maxOffset.
		if !flush(wall - maxOffset) {
			return
		}
		if wall-maxOffset > untilSec || (!bounded && d > first+searchDays) {
			flush(maxUnix)
			return
		}
		if !s.dayMatches(d) {
			continue
		}
		ps := zonePeriods(s.loc, wall-maxOffset, wall+day+maxOffset)
		// Wall time w fires within [w-hiOff, w-loOff]: skip the hours that
		// cannot reach (after, until].
		loOff, hiOff := ps[0].off, ps[0].off
		for _, p := range ps {
			loOff, hiOff = min(loOff, p.off), max(hiOff, p.off)
		}
		added := false
		for h := int64(0); h < 24; h++ {
			hw := wall + h*3600
			if s.hour&(1<<h) == 0 || hw+59*60-loOff <= afterSec {
				continue
			}
			if hw-hiOff > untilSec {
				break
			}
			for m := int64(0); m < 60; m++ {
				if s.minute&(1<<m) == 0 {
					continue
				}
				for _, a := range s.resolve(wall+h*3600+m*60, ps) {
					if a.t > afterSec {
						pending = append(pending, a)
						added = true
					}
				}
			}
		}
		if added {
			sort.SliceStable(pending, func(i, j int) bool { return pending[i].t < pending[j].t })
			// Several wall times can land on one instant (a gap): it fires once.
			out := pending[:0]
			for _, p := range pending {
				if n := len(out); n > 0 && out[n-1].t == p.t {
					if p.mark == MarkGap {
						out[n-1].mark = MarkGap
					}
					continue
				}
				out = append(out, p)
			}
			pending = out
		}
	}
}

// dayMatches applies cron's day rules to day number d (days since the
// epoch, as a civil date): month, then day of month and day of week (both
// must match when either is "*", else either may).
func (s *Schedule) dayMatches(d int64) bool {
	c := time.Unix(d*day, 0).UTC()
	_, month, dom := c.Date()
	if s.month&(1<<uint(month)) == 0 {
		return false
	}
	domOK := s.dom&(1<<uint(dom)) != 0
	dowOK := s.dow&(1<<uint(c.Weekday())) != 0
	if s.domStar || s.dowStar {
		return domOK && dowOK
	}
	return domOK || dowOK
}

type instant struct {
	t    int64
	mark string
}

// period is a stretch of time with one UTC offset: [start, end).
type period struct{ start, end, off int64 }

// zonePeriods lists loc's offset periods that overlap the instants [lo, hi].
func zonePeriods(loc *time.Location, lo, hi int64) []period {
	var ps []period
	t := time.Unix(lo, 0).In(loc)
	for range 64 {
		_, off := t.Zone()
		start, end := t.ZoneBounds()
		p := period{start: minUnix, end: maxUnix, off: int64(off)}
		if !start.IsZero() {
			p.start = start.Unix()
		}
		if !end.IsZero() {
			p.end = end.Unix()
		}
		ps = append(ps, p)
		if p.end > hi || p.end <= t.Unix() {
			break
		}
		t = time.Unix(p.end, 0).In(loc)
	}
	return ps
}

// resolve maps wall time w (seconds since the epoch, read as local) to the
// instants it fires at, under the gap and overlap rules.
func (s *Schedule) resolve(w int64, ps []period) []instant {
	if len(ps) == 1 {
		return []instant{{t: w - ps[0].off}}
	}
	var ts []int64
	for _, p := range ps {
		if t := w - p.off; t >= p.start && t < p.end {
			ts = append(ts, t)
		}
	}
	switch len(ts) {
	case 0:
		// In a gap: fire at the transition that skipped over w.
		for i := 0; i+1 < len(ps); i++ {
			p, q := ps[i], ps[i+1]
			if p.off < q.off && q.start+p.off <= w && w < q.start+q.off {
				return []instant{{t: q.start, mark: MarkGap}}
			}
		}
		return nil
	case 1:
		return []instant{{t: ts[0]}}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	if !s.elapsed {
		return []instant{{t: ts[0], mark: MarkOverlapFirst}}
	}
	out := []instant{{t: ts[0], mark: MarkOverlapFirst}}
	for _, t := range ts[1:] {
		out = append(out, instant{t: t, mark: MarkOverlapRepeat})
	}
	return out
}

// everyMark marks an @every activation whose local wall time is repeated.
func (s *Schedule) everyMark(t int64) string {
	_, off := time.Unix(t, 0).In(s.loc).Zone()
	w := t + int64(off)
	ps := zonePeriods(s.loc, w-maxOffset, w+maxOffset)
	if len(ps) == 1 {
		return ""
	}
	n, first := 0, int64(maxUnix)
	for _, p := range ps {
		if u := w - p.off; u >= p.start && u < p.end {
			n++
			first = min(first, u)
		}
	}
	switch {
	case n < 2:
		return ""
	case t == first:
		return MarkOverlapFirst
	}
	return MarkOverlapRepeat
}

func clampUnix(t int64) int64 { return max(minUnix, min(maxUnix, t)) }

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
