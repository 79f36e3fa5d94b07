package main

import (
	"testing"
	"time"
)

func TestParseWaitTakesDurationsAndSeconds(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"300ms", 300 * time.Millisecond, true},
		{"5s", 5 * time.Second, true},
		{"1h30m", 90 * time.Minute, true},
		{"0", 0, true},
		{"0s", 0, true},
		{"5", 5 * time.Second, true},
		{"0.5", 500 * time.Millisecond, true},
		{"", 0, false},
		{"-1s", 0, false},
		{"-5", 0, false},
		{"soon", 0, false},
		{"NaN", 0, false},
		{"inf", 0, false},
		{"-inf", 0, false},
		{"1e300", 0, false},
		{"5 s", 0, false},
	} {
		got, err := parseWait(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseWait(%q) = %v, %v; want %v, ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
}

// FuzzParseWait: any input gives a non-negative duration or an error.
func FuzzParseWait(f *testing.F) {
	for _, s := range []string{"300ms", "5", "0.5", "-1", "1e9", "NaN", "9223372036s", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseWait(s)
		if err == nil && d < 0 {
			t.Errorf("parseWait(%q) = %v, negative", s, d)
		}
		if err != nil && d != 0 {
			t.Errorf("parseWait(%q) failed but returned %v", s, d)
		}
	})
}
