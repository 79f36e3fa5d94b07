package tms

import (
	"fmt"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/tms/sched"
)

// ParseAt reads a --at time: RFC 3339 ("2026-11-30T08:00:00Z"),
// "YYYY-MM-DD HH:MM" in loc (host-local), or "+DUR" relative to now
// ("+2h", "+1d"). A time in the past is allowed: the task is due now.
func ParseAt(s string, now time.Time, loc *time.Location) (time.Time, error) {
	if loc == nil {
		loc = time.Local
	}
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "+") {
		d, err := home.ParseDuration(s[1:])
		if err != nil || d < 0 || strings.HasPrefix(s[1:], "-") || strings.HasPrefix(s[1:], "+") {
			return time.Time{}, usage("--at %q: not a duration after + (like +2h, +90m or +1d)", s)
		}
		return now.Add(d).UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	if w, err := time.Parse("2006-01-02 15:04", s); err == nil {
		return localWall(w, loc).UTC(), nil
	}
	return time.Time{}, usage("--at %q: use RFC 3339 (2026-11-30T08:00:00Z), \"YYYY-MM-DD HH:MM\" (host-local) or +DUR (+2h)", s)
}

// localWall maps the wall time w (its fields, read as in loc) to an instant by
// the template rules (sched): a wall time in a spring-forward gap is the
// first instant after the gap, one in a fall-back overlap its first
// occurrence. time.Date leaves both unspecified (it puts a gap time before
// the gap).
func localWall(w time.Time, loc *time.Location) time.Time {
	t := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), 0, 0, loc)
	spec := fmt.Sprintf("%d %d %d %d *", w.Minute(), w.Hour(), w.Day(), int(w.Month()))
	s, err := sched.Parse(spec, loc)
	if err != nil {
		return t
	}
	after := time.Date(w.Year(), w.Month(), w.Day(), 0, 0, 0, 0, time.UTC).Add(-48 * time.Hour)
	n := s.Next(after)
	if n.IsZero() || n.Sub(after) > 5*24*time.Hour {
		return t
	}
	return n
}
