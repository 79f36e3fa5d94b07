package main

import (
	"os"
	"strings"
	"testing"
)

func TestAdhocFlagsThatCannotBeHonouredAreUsageErrors(t *testing.T) {
	f := newFixture(t, job, "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--clean", "--channel", "x"}, "exclude each other"},
		{[]string{"--channel", ""}, "non-empty"},
		{[]string{"--ceiling", "0s"}, "positive"},
		{[]string{"--ceiling=-1m"}, "positive"},
	} {
		args := append(append([]string{"run", "dobby"}, c.args...), "--", "true")
		code, _, errb := f.box(args...)
		if code != 2 || !strings.Contains(errb, c.want) {
			t.Errorf("%v: exit %d, %s; want 2 mentioning %q", c.args, code, errb, c.want)
		}
	}
	if ents, _ := os.ReadDir(f.w.Runs()); len(ents) != 0 {
		t.Fatalf("a refused run left %d run folders", len(ents))
	}
}
