package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/home"
)

// Off is the word that disables a duration setting where docs/layout.md allows it
// (heartbeat, idle, budget.proactive).
const Off = "off"

// ParseDuration parses a duration ("30m", "1h30m", "2d": home.ParseDuration)
// that must be positive. With offOK, "off" is accepted and returns 0.
func ParseDuration(s string, offOK bool) (time.Duration, error) {
	if offOK && s == Off {
		return 0, nil
	}
	d, err := home.ParseDuration(s)
	if err != nil || d <= 0 {
		like := `(like "30m", "1h30m" or "2d")`
		if offOK {
			like += ` or "off"`
		}
		msg := fmt.Sprintf("%q is not a positive duration %s", s, like)
		if de := (*home.DurationError)(nil); errors.As(err, &de) && s != "" {
			msg += ": " + de.Why
		}
		return 0, errors.New(msg)
	}
	return d, nil
}

// FormatDuration is the inverse of ParseDuration: 0 is "off", and whole
// hours and minutes are written without the trailing zero units ("2h", "30m").
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return Off
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gib": 1 << 30,
	"t": 1 << 40, "tib": 1 << 40,
}

// ParseSize parses a size: a whole number of bytes, optionally followed by
// K, M, G or T (powers of 1024; "KiB", "MiB", "GiB", "TiB" mean the same,
// any case), e.g. "2G", "512MiB", "1048576".
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%q is not a size (a number and K, M, G or T, like \"2G\")", s)
	}
	unit, ok := sizeUnits[strings.ToLower(strings.TrimSpace(t[i:]))]
	if !ok {
		return 0, fmt.Errorf("%q: unknown size unit %q (K, M, G or T, powers of 1024)", s, strings.TrimSpace(t[i:]))
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil || n > math.MaxInt64/unit {
		return 0, fmt.Errorf("%q is too large a size", s)
	}
	return n * unit, nil
}

// FormatSize writes n in the largest unit that divides it ("2G", "512M", "100").
func FormatSize(n int64) string {
	for _, u := range []struct {
		s string
		v int64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n != 0 && n%u.v == 0 {
			return strconv.FormatInt(n/u.v, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10)
}

// sizeValue accepts a size written as a TOML string ("2G") or integer (bytes).
func sizeValue(v any) (int64, error) {
	switch x := v.(type) {
	case string:
		return ParseSize(x)
	case int64:
		if x < 0 {
			return 0, fmt.Errorf("%d is not a size (it is negative)", x)
		}
		return x, nil
	}
	return 0, fmt.Errorf("a size must be a string like \"2G\" or a whole number of bytes, not %v", v)
}
