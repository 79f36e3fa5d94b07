package sched

import "time"

// Decision is what Plan says to do with a template now.
type Decision struct {
	// Fire is the activation to fire (a task whose id derives from it), or
	// nil.
	Fire *time.Time
	// Skipped holds at most one entry per reason, in time order: each
	// stands for Count activations, At being the latest of them. The
	// caller journals one `skipped` line per entry.
	Skipped []Skip
	// Missed counts the activations not fired because of catch_up (the
	// earlier ones under "latest", all of them under "none"); it is the
	// Count of the "catch-up" entry, 0 when there is none.
	Missed int
	// Due counts the activations in (cursor, now].
	Due int
	// NewCursor is the cursor to store with the outcome: the latest
	// activation dealt with (fired or skipped). It never moves backwards.
	NewCursor time.Time
}

// Skip is a run of activations not fired for one reason.
type Skip struct {
	At     time.Time // the latest activation skipped for this reason, UTC
	Reason string    // SkipCatchUp or SkipWindow
	Count  int
}

// The reasons of a Skip. (The caller adds "overlap", which needs the
// partition's state.)
const (
	SkipCatchUp = "catch-up" // missed during downtime and not caught up
	SkipWindow  = "window"   // later than the template's window
)

// maxLookback bounds how far back Plan counts missed activations: a cursor
// older than this counts only the activations of the last ten years.
const maxLookback = 10 * 366 * 24 * time.Hour

// Plan decides what a template does at `now`, given its cursor (the UTC
// time of the last activation it dealt with). The activations considered
// are those in (cursor, now]:
//
//   - none (including now before the cursor: the wall clock moved back):
//     nothing fires and the cursor stays;
//   - one: it fires, unless window > 0 and it is more than window late
//     (now - activation > window), then it is skipped (SkipWindow);
//   - several (downtime, or the clock jumped forward): with catch_up
//     "latest" (or "") the latest is treated as above and the earlier ones
//     are skipped as one SkipCatchUp entry with Missed = their number; with
//     "none" all of them are skipped as one SkipCatchUp entry, nothing
//     fires, and the template resumes at its next activation.
//
// NewCursor is the latest activation in (cursor, now], whatever was done
// with it. A zero cursor (a template never planned) fires nothing and
// returns now, truncated to the second, as its cursor: the caller should
// store a new template's creation time as its cursor, so its first
// activation is the first one after it was made. Plan is pure; the caller
// applies the overlap rule (it needs the partition) before firing.
func Plan(s *Schedule, cursor, now time.Time, window time.Duration, catchUp string) Decision {
	if cursor.IsZero() {
		return Decision{NewCursor: now.UTC().Truncate(time.Second)}
	}
	d := Decision{NewCursor: cursor}
	if !now.After(cursor) {
		return d
	}
	from := cursor
	if now.Sub(cursor) > maxLookback {
		from = now.Add(-maxLookback)
	}
	n, last, prev := s.tally(from, now)
	if n == 0 {
		return d
	}
	d.Due, d.NewCursor = n, last
	if n > 1 && catchUp == CatchUpNone {
		d.Missed = n
		d.Skipped = []Skip{{At: last, Reason: SkipCatchUp, Count: n}}
		return d
	}
	if n > 1 {
		d.Missed = n - 1
		d.Skipped = []Skip{{At: prev, Reason: SkipCatchUp, Count: n - 1}}
	}
	if window > 0 && now.Sub(last) > window {
		d.Skipped = append(d.Skipped, Skip{At: last, Reason: SkipWindow, Count: 1})
		return d
	}
	fire := last
	d.Fire = &fire
	return d
}

// tally counts the activations in (after, until] and returns the last two.
func (s *Schedule) tally(after, until time.Time) (n int, last, prev time.Time) {
	if s.every > 0 {
		a, u := clampUnix(after.Unix()), clampUnix(until.Unix())
		k1, k2 := floorDiv(a, s.every)+1, floorDiv(u, s.every)
		if k2 < k1 {
			return 0, time.Time{}, time.Time{}
		}
		n = int(k2 - k1 + 1)
		last = time.Unix(k2*s.every, 0).UTC()
		if n > 1 {
			prev = time.Unix((k2-1)*s.every, 0).UTC()
		}
		return n, last, prev
	}
	s.walk(after, until, func(a Activation) bool {
		n++
		prev, last = last, a.At
		return true
	})
	return n, last, prev
}

// Preview returns the next n activations strictly after `after`, marked
// with the daylight-saving case they fall in: the same computation Plan
// fires from.
func Preview(s *Schedule, after time.Time, n int) []Activation {
	var out []Activation
	if n <= 0 {
		return nil
	}
	s.walk(after, time.Time{}, func(a Activation) bool {
		out = append(out, a)
		return len(out) < n
	})
	return out
}
