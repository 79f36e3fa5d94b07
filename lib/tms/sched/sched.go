package sched

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// Schedule is a parsed template spec, read in its zone. It never changes
// after Parse and is safe for concurrent use.
type Schedule struct {
	spec  string
	loc   *time.Location
	every int64 // seconds, > 0 for @every; the fields below are unused then

	minute, hour, dom, month, dow uint64 // robfig's bit sets (bit n = value n)
	domStar, dowStar              bool   // "*" in the field: day matching is AND, else OR
	elapsed                       bool   // "*" or a step in the hour field: both overlap occurrences fire
}

const starBit = 1 << 63

var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

func usage(format string, a ...any) error {
	return errs.New(errs.ErrUsage, fmt.Sprintf(format, a...))
}

// Parse reads spec: five cron fields (minute hour day-of-month month
// day-of-week), or a descriptor (@hourly, @daily, @midnight, @weekly,
// @monthly, @yearly, @annually, @every DUR), optionally preceded by
// "CRON_TZ=Zone " or "TZ=Zone ". Without a prefix the spec is read in loc
// (the host's zone; nil means time.Local). A spec that does not parse is an
// errs.ErrUsage error carrying the parser's message; Parse never panics.
func Parse(spec string, loc *time.Location) (s *Schedule, err error) {
	if loc == nil {
		loc = time.Local
	}
	body := strings.TrimSpace(spec)
	if body == "" {
		return nil, usage("cron spec is empty")
	}
	if zone, rest, ok := cutZone(body); ok {
		if zone == "" {
			return nil, usage("cron spec %q: empty zone after TZ=", spec)
		}
		l, lerr := time.LoadLocation(zone)
		if lerr != nil {
			return nil, usage("cron spec %q: unknown zone %q", spec, zone)
		}
		loc, body = l, strings.TrimSpace(rest)
		if body == "" {
			return nil, usage("cron spec %q: nothing after the zone", spec)
		}
		if _, _, again := cutZone(body); again {
			return nil, usage("cron spec %q: more than one zone prefix", spec)
		}
	}
	s = &Schedule{spec: strings.TrimSpace(spec), loc: loc}
	if rest, ok := strings.CutPrefix(body, "@every"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
		d, perr := home.ParseDuration(strings.TrimSpace(rest))
		if perr != nil {
			return nil, usage("cron spec %q: @every: %v", spec, perr)
		}
		if d < time.Second || d%time.Second != 0 {
			return nil, usage("cron spec %q: @every needs a whole number of seconds, at least 1s", spec)
		}
		s.every = int64(d / time.Second)
		return s, nil
	}

	defer func() {
		if r := recover(); r != nil {
			s, err = nil, usage("cron spec %q: %v", spec, r)
		}
	}()
	parsed, perr := parser.Parse(sundayAsSeven(body))
	if perr != nil {
		return nil, usage("cron spec %q: %v", spec, perr)
	}
	ss, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, usage("cron spec %q: unsupported schedule", spec)
	}
	if ss.Second&^starBit != 1 {
		return nil, usage("cron spec %q: seconds are not supported", spec)
	}
	s.minute, s.hour, s.dom, s.month, s.dow = ss.Minute&^starBit, ss.Hour&^starBit, ss.Dom&^starBit, ss.Month&^starBit, ss.Dow&^starBit
	s.domStar, s.dowStar = ss.Dom&starBit != 0, ss.Dow&starBit != 0
	if strings.HasPrefix(body, "@") {
		s.elapsed = body == "@hourly"
	} else {
		f := strings.Fields(body)
		s.elapsed = strings.ContainsAny(f[1], "*?/")
	}
	if s.minute == 0 || s.hour == 0 || s.dom == 0 || s.month == 0 || s.dow == 0 {
		return nil, usage("cron spec %q: a field matches nothing", spec)
	}
	return s, nil
}

// cutZone splits a "CRON_TZ=Zone rest" or "TZ=Zone rest" prefix.
func cutZone(spec string) (zone, rest string, ok bool) {
	var after string
	if a, found := strings.CutPrefix(spec, "CRON_TZ="); found {
		after = a
	} else if a, found := strings.CutPrefix(spec, "TZ="); found {
		after = a
	} else {
		return "", "", false
	}
	i := strings.IndexAny(after, " \t")
	if i < 0 {
		return after, "", true
	}
	return after[:i], after[i:], true
}

// String returns the spec as written (trimmed).
func (s *Schedule) String() string { return s.spec }

// Location returns the zone the spec is read in.
func (s *Schedule) Location() *time.Location { return s.loc }

// Every returns the period of an @every spec, 0 for a calendar spec.
func (s *Schedule) Every() time.Duration { return time.Duration(s.every) * time.Second }

// FollowsElapsedTime reports whether the spec fires at both occurrences of
// a repeated (fall-back) wall time: @every, @hourly, "*" or a step in the
// hour field.
func (s *Schedule) FollowsElapsedTime() bool { return s.every > 0 || s.elapsed }

// Next returns the first activation strictly after `after`, in UTC, or the
// zero time if there is none within searchYears (e.g. "0 0 30 2 *").
func (s *Schedule) Next(after time.Time) time.Time {
	var next time.Time
	s.walk(after, time.Time{}, func(a Activation) bool {
		next = a.At
		return false
	})
	return next
}

// Between returns the activations in (after, until], in order, at most max
// of them (max <= 0: none); more reports that further ones exist in the
// interval.
func (s *Schedule) Between(after, until time.Time, max int) (acts []time.Time, more bool) {
	if !until.After(after) {
		return nil, false
	}
	s.walk(after, until, func(a Activation) bool {
		if len(acts) >= max {
			more = true
			return false
		}
		acts = append(acts, a.At)
		return true
	})
	return acts, more
}

// ParseWindow reads a template's window: "" (or any zero duration) is 0,
// meaning no bound; otherwise a positive duration such as "2h", "90m" or "1d".
func ParseWindow(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := home.ParseDuration(v)
	if err != nil {
		return 0, usage("window: %v", err)
	}
	if d < 0 {
		return 0, usage("window %q: must not be negative", v)
	}
	return d, nil
}

// The catch_up values of a template.
const (
	CatchUpLatest = "latest" // the default: fire the latest missed activation
	CatchUpNone   = "none"   // fire none of several missed activations
)

// ParseCatchUp checks a template's catch_up ("" means latest) and returns
// its canonical value.
func ParseCatchUp(v string) (string, error) {
	switch v {
	case "", CatchUpLatest:
		return CatchUpLatest, nil
	case CatchUpNone:
		return CatchUpNone, nil
	}
	return "", usage("catch_up %q: must be latest or none", v)
}

// unix time bounds we compute within; beyond them nothing activates.
const (
	minUnix = math.MinInt64 / 4
	maxUnix = math.MaxInt64 / 4
)

// sundayAsSeven rewrites a 7 in the day-of-week field, which cron reads as
// Sunday like 0 and robfig/cron refuses (its range is 0-6): "7" is "0",
// "5-7" is "5-6,0", "1-7/2" is "1,3,5,0". Anything else is left for the
// parser and its messages.
func sundayAsSeven(body string) string {
	f := strings.Fields(body)
	if len(f) != 5 || !strings.Contains(f[4], "7") {
		return body
	}
	parts := strings.Split(f[4], ",")
	for i, part := range parts {
		rng, step := part, 1
		if r, st, ok := strings.Cut(part, "/"); ok {
			n, err := strconv.Atoi(st)
			if err != nil || n < 1 {
				continue
			}
			rng, step = r, n
		}
		lo, hi, isRange := strings.Cut(rng, "-")
		if !isRange {
			if lo != "7" || step != 1 {
				continue
			}
			hi = lo
		}
		a, aerr := strconv.Atoi(lo)
		b, berr := strconv.Atoi(hi)
		if aerr != nil || berr != nil || b != 7 || a < 0 || a > b {
			continue
		}
		var vals []string
		for v := a; v <= b; v += step {
			vals = append(vals, strconv.Itoa(v%7))
		}
		parts[i] = strings.Join(vals, ",")
	}
	f[4] = strings.Join(parts, ",")
	return strings.Join(f, " ")
}
