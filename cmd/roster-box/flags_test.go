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

// reap with neither a run nor --cgroups has nothing to do: a usage error;
// --cgroups alone sweeps the home's empty supervisor cgroups (none here).
func TestReapNeedsARunOrCgroups(t *testing.T) {
	f := newFixture(t, job, "")
	if code, _, errb := f.box("reap"); code != 2 || !strings.Contains(errb, "--cgroups") {
		t.Errorf("reap: exit %d, %s; want 2 naming --cgroups", code, errb)
	}
	if code, _, errb := f.box("reap", "--cgroups"); code != 0 {
		t.Errorf("reap --cgroups: exit %d, %s; want 0", code, errb)
	}
}
