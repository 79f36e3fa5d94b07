package main

import (
	"reflect"
	"testing"
)

// TestNegativeFlagValuesAreJoined: a negative number after a numeric flag
// is its value (kong would take it for a short flag); nothing else moves.
func TestNegativeFlagValuesAreJoined(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"rt", "journal", "w", "--since", "-1"}, []string{"rt", "journal", "w", "--since=-1"}},
		{[]string{"rt", "template", "next", "--cron", "@daily", "-n", "-2"}, []string{"rt", "template", "next", "--cron", "@daily", "--count=-2"}},
		{[]string{"rt", "add", "w", "x", "--priority", "-5", "--ceiling", "1h"}, []string{"rt", "add", "w", "x", "--priority=-5", "--ceiling", "1h"}},
		{[]string{"rt", "worker", "add", "z", "--uid", "-1"}, []string{"rt", "worker", "add", "z", "--uid=-1"}},
		{[]string{"rt", "add", "w", "--priority", "3", "-1"}, []string{"rt", "add", "w", "--priority", "3", "-1"}},
		{[]string{"rt", "add", "w", "--", "--priority", "-1"}, []string{"rt", "add", "w", "--", "--priority", "-1"}},
		{[]string{"rt", "add", "w", "--ceiling", "-1"}, []string{"rt", "add", "w", "--ceiling", "-1"}},
		{[]string{"rt", "journal", "w", "--since"}, []string{"rt", "journal", "w", "--since"}},
	} {
		if got := joinNegativeValues(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("joinNegativeValues(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
