package config

import (
	"regexp"
	"testing"
)

// TestLazyRulesCompileAndMatch pins the rules compiled on first use: a bad
// expression would otherwise only panic in the one path that reads it.
func TestLazyRulesCompileAndMatch(t *testing.T) {
	for _, c := range []struct {
		name string
		rule func() *regexp.Regexp
		in   string
		want bool
	}{
		{"envNameRE", envNameRE, "PATH_2", true},
		{"envNameRE", envNameRE, "2PATH", false},
		{"connAtRE", connAtRE, "notes.d", true},
		{"connAtRE", connAtRE, ".hidden", false},
		{"commentedKeyRE", commentedKeyRE, "# paused = true", true},
		{"commentedKeyRE", commentedKeyRE, "paused = true", false},
		{"commentedKeyRE", commentedKeyRE, "# paused = false # note", true},
		{"commentedKeyRE", commentedKeyRE, "# paused = false 00", false},
		{"uidLineRE", uidLineRE, "x = 1\n  uid = 200001\n", true},
		{"uidLineRE", uidLineRE, "uid = none", false},
	} {
		if got := c.rule().MatchString(c.in); got != c.want {
			t.Errorf("%s.MatchString(%q) = %v, want %v", c.name, c.in, got, c.want)
		}
	}
}
