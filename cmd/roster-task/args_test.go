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

// TestSetVersionIsRenamedAfterJoining: fixArgs joins a negative value
// before it renames set's --version, and leaves the global --version and
// other verbs alone.
func TestSetVersionIsRenamedAfterJoining(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"set", "w", "--version", "3"}, []string{"set", "w", "--set-version", "3"}},
		{[]string{"set", "w", "--version", "-1"}, []string{"set", "w", "--set-version=-1"}},
		{[]string{"--home", "h", "set", "w", "--version=4", "-"}, []string{"--home", "h", "set", "w", "--set-version=4", "-"}},
		{[]string{"--version"}, []string{"--version"}},
		{[]string{"ls", "--version"}, []string{"ls", "--version"}},
		{[]string{"set", "w", "--", "--version"}, []string{"set", "w", "--", "--version"}},
	} {
		if got := fixArgs(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("fixArgs(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
