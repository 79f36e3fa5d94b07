package home

import (
	"strings"
	"testing"
	"time"
)

func TestDurationsTakeDays(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"0": 0, "90s": 90 * time.Second, "1h30m": 90 * time.Minute,
		"1d": Day, "2d": 2 * Day, "1d12h": 36 * time.Hour, "1.5d": 36 * time.Hour,
		"30d": 30 * Day, "+1d": Day, "-2d": -2 * Day, "300ms": 300 * time.Millisecond,
		"1h1d": 25 * time.Hour, "2µs": 2 * time.Microsecond,
	} {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}

func TestBareNumberIsNotADuration(t *testing.T) {
	for in, why := range map[string]string{
		"5": "needs a unit", "": "empty", "d": "a number must come", "1x": `unknown unit "x"`,
		"1d5": "needs a unit", "1..2d": "not a duration", "-": "empty",
		"106751d23h47m16.854775808s": "too long",
	} {
		_, err := ParseDuration(in)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("ParseDuration(%q) = %v; want an error saying %q", in, err, why)
		}
	}
}

// FuzzParseDuration: never panics; what Go parses (without d) this parses
// the same; a form whose only unit is d is 24 times its h form.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"0", "1d", "1.5d12h", "-3h", "5", "9223372036854775807ns", "1d1d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if strings.Contains(s, "d") {
			onlyDays := strings.Trim(s, "+-.0123456789d") == ""
			if h, herr := ParseDuration(strings.ReplaceAll(s, "d", "h")); err == nil && herr == nil && onlyDays && d != 24*h {
				t.Fatalf("%q = %v, but its h form is %v", s, d, h)
			}
			return
		}
		g, gerr := time.ParseDuration(s)
		if gerr == nil && s != "" && (err != nil || d != g) {
			// Go also reads a bare 0 with a sign; anything else it reads must agree.
			if !(err != nil && strings.Contains(err.Error(), "needs a unit")) {
				t.Fatalf("%q: Go %v, ours %v %v", s, g, d, err)
			}
		}
	})
}
