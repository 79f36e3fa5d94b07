package home

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Day is the `d` unit of a duration: 24 hours of elapsed time (a
// duration is never a calendar day; a DST change does not stretch it).
const Day = 24 * time.Hour

// ParseDuration reads a duration as docs/layout.md writes them everywhere: Go's
// units (ns, us, ms, s, m, h) plus d, in any sequence ("90s", "1h30m",
// "2d", "1d12h", "1.5d"), with an optional sign. "0" is zero; any other
// bare number is refused, since it could mean seconds or minutes (only
// roster-lock --wait takes bare seconds, as flock(1) does). Callers
// decide whether zero or a negative value is allowed.
func ParseDuration(s string) (time.Duration, error) {
	if s == "0" || s == "+0" || s == "-0" {
		return 0, nil
	}
	rest, neg := s, false
	if rest != "" && (rest[0] == '+' || rest[0] == '-') {
		neg, rest = rest[0] == '-', rest[1:]
	}
	if rest == "" {
		return 0, durationError(s, "empty")
	}
	var total time.Duration
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] == '.' || rest[i] >= '0' && rest[i] <= '9') {
			i++
		}
		j := i
		for j < len(rest) && rest[j] != '.' && (rest[j] < '0' || rest[j] > '9') {
			j++
		}
		num, unit := rest[:i], rest[i:j]
		rest = rest[j:]
		switch {
		case num == "":
			return 0, durationError(s, "a number must come before each unit")
		case unit == "":
			return 0, durationError(s, "a duration needs a unit: s, m, h or d")
		}
		var d time.Duration
		var err error
		if unit == "d" {
			if d, err = time.ParseDuration(num + "h"); err == nil {
				if d > math.MaxInt64/24 {
					return 0, durationError(s, "too long")
				}
				d *= 24
			}
		} else {
			d, err = time.ParseDuration(num + unit)
		}
		if err != nil {
			if strings.Contains(err.Error(), "unknown unit") {
				return 0, durationError(s, fmt.Sprintf("unknown unit %q (s, m, h or d)", unit))
			}
			return 0, durationError(s, strings.TrimPrefix(err.Error(), "time: "))
		}
		if total > math.MaxInt64-d {
			return 0, durationError(s, "too long")
		}
		total += d
	}
	if neg {
		total = -total
	}
	return total, nil
}

// DurationError is a string ParseDuration cannot read, and why.
type DurationError struct{ Input, Why string }

func (e *DurationError) Error() string {
	return fmt.Sprintf("%q is not a duration (like 90s, 1h30m or 2d): %s", e.Input, e.Why)
}

func durationError(s, why string) error { return &DurationError{s, why} }
