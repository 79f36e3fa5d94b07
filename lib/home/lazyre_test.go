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
	for _, re := range []*lazyRE{workerRE, templateRE, lockRE} {
		if parseClassRule(re.expr) == nil {
			t.Errorf("rule %q is not matched by the fast class table", re.expr)
		}
	}
}

// FuzzNameRulesMatchRegexp: the fast class table and the regexp package
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
