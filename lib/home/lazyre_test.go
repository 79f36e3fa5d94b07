package home

import (
	"regexp"
	"strings"
	"testing"
)

var allRules = []*lazyRE{runRE, filedTaskRE, firedTaskRE, snapRE, workerRE, templateRE, lockRE}

// TestNameRulesCompile: the rules are compiled on first use, so a typo in
// one would only show when it is first needed; compile them all here.
func TestNameRulesCompile(t *testing.T) {
	for _, re := range allRules {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("rule %q does not compile: %v", re.expr, r)
				}
			}()
			re.MatchString("")
		}()
	}
}

// TestRuleCompilerRefusesWhatItCannotMatch: an expression outside the
// supported shape, or one a greedy pass could get wrong, is refused (it
// would panic on first use), never matched approximately.
func TestRuleCompilerRefusesWhatItCannotMatch(t *testing.T) {
	for _, expr := range []string{"", "^$", "a", "^a", "a$", "^a*$", "^a+$", "^(a)$", "^a|b$", "^[^a]$", "^[a$",
		"^a{1$", "^a{2,1}$", "^a{x}$", "^a{1,x}$", "^a{0,1001}$", `^\w$`, "^.$", "^[]$", "^[a-]x]$", "^é$", "^[é]$",
		"^[a-z]{0,3}[a-c]{2}$", "^a{1,2}a$", "^a{0,2}b{0,1}c$", `^\d{1,3}[0-9a-z]$`} {
		if _, ok := compileRule(expr); ok {
			t.Errorf("compileRule(%q) took it", expr)
		}
	}
}

// TestRuleMatchesWhatRegexpMatches: rules with repeats that vary, on
// inputs at and around their bounds.
func TestRuleMatchesWhatRegexpMatches(t *testing.T) {
	for _, expr := range []string{`^a{2}[a-z0-9]{1,4}\.[0-9]{0,2}$`, `^\d{1,3}[a-z]{2,3}$`, `^x-[a-]{1,2}_$`, `^[0-9]{0,2}$`} {
		items, ok := compileRule(expr)
		if !ok {
			t.Fatalf("compileRule(%q) refused it", expr)
		}
		re := regexp.MustCompile(expr)
		for _, s := range []string{"", "1", "12", "123", "aab.", "aa1234.56", "aa12345.5", "aa1.", "aa.", "1ab", "123abc", "1234ab",
			"1abcd", "x-a_", "x-a-_", "x-aaa_", "x-_", "\xffab", "12\n"} {
			if got, want := matchItems(items, s), re.MatchString(s); got != want {
				t.Errorf("%q on %q: %v, regexp says %v", expr, s, got, want)
			}
		}
	}
}

// FuzzNameRulesMatchRegexp: the rules matched without regexp and the regexp package
// agree on every rule, for any input.
func FuzzNameRulesMatchRegexp(f *testing.F) {
	for _, s := range []string{"", "a", "dobby", "Dobby", "_x", ".hidden", "a/b", "../x", "a-", "a.b",
		"x~", "store", "\xff", "a\n", "0123456789012345678901234567890123456789012345678901234567890123456789",
		string(make([]byte, 128)), "t-2026-11-29-19-22-01-k3v9", "20260719-104432.512"} {
		f.Add(s)
	}
	for _, n := range []int{62, 63, 64, 127, 128, 129} {
		f.Add(strings.Repeat("a", n))
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range allRules {
			want := regexp.MustCompile(r.expr).MatchString(s)
			if got := r.MatchString(s); got != want {
				t.Errorf("rule %q on %q: %v, regexp says %v", r.expr, s, got, want)
			}
		}
		long := s
		for len(long) < 130 {
			long += "a"
		}
		for _, r := range allRules {
			if got, want := r.MatchString(long), regexp.MustCompile(r.expr).MatchString(long); got != want {
				t.Errorf("rule %q on %q: %v, regexp says %v", r.expr, long, got, want)
			}
		}
	})
}
