package tms

import (
	"strings"
	"time"
)

// ParseAt reads a --at time: RFC 3339 ("2026-11-30T08:00:00Z"),
// "YYYY-MM-DD HH:MM" in loc (host-local), or "+DUR" relative to now
// ("+2h"). A time in the past is allowed: the task is due now.
func ParseAt(s string, now time.Time, loc *time.Location) (time.Time, error) {
	if loc == nil {
		loc = time.Local
	}
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "+") {
		d, err := time.ParseDuration(s[1:])
		if err != nil || d < 0 || strings.HasPrefix(s[1:], "-") || strings.HasPrefix(s[1:], "+") {
			return time.Time{}, usage("--at %q: not a duration after + (like +2h or +90m)", s)
		}
		return now.Add(d).UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.ParseInLocation("2006-01-02 15:04", s, loc); err == nil {
		return t.UTC(), nil
	}
	return time.Time{}, usage("--at %q: use RFC 3339 (2026-11-30T08:00:00Z), \"YYYY-MM-DD HH:MM\" (host-local) or +DUR (+2h)", s)
}
