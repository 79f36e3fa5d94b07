package runs

import (
	"fmt"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// ParseSince reads a --since value: RFC 3339, "YYYY-MM-DD HH:MM" or
// "YYYY-MM-DD" (in zone, the host zone; nil: time.Local), or an age such
// as "90m", "36h" or "7d" (that long before now).
func ParseSince(s string, now time.Time, zone *time.Location) (time.Time, error) {
	if zone == nil {
		zone = time.Local
	}
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, zone); err == nil {
			return t, nil
		}
	}
	if d, err := ParseAge(s); err == nil {
		return now.Add(-d), nil
	}
	return time.Time{}, errs.New(errs.ErrUsage, fmt.Sprintf(
		"time %q: use RFC 3339, \"YYYY-MM-DD HH:MM\", \"YYYY-MM-DD\" or an age like 36h or 7d", s))
}

// ParseAge reads a non-negative age: a duration ("90m", "36h", "7d",
// "1d12h": home.ParseDuration).
func ParseAge(s string) (time.Duration, error) {
	d, err := home.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, errs.New(errs.ErrUsage, fmt.Sprintf("age %q: want a duration like 90m, 36h or 7d", s))
	}
	return d, nil
}
