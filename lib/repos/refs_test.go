package repos

import (
	"strings"
	"testing"
)

const (
	z  = "0000000000000000000000000000000000000000"
	a1 = "1111111111111111111111111111111111111111"
	b2 = "2222222222222222222222222222222222222222"
)

func TestJudgeRefs(t *testing.T) {
	own := map[string]bool{"roster/dobby/mine": true}
	p := Policy{Push: []string{"roster/dobby/*"}, Protect: []string{"main", "master", "release/*"}, Force: "own",
		Own: func(b string) bool { return own[b] }}
	ffOnly := func(old, new string) bool { return old == a1 && new == b2 }
	for _, c := range []struct {
		cmd  Command
		pol  func(Policy) Policy
		kind string
		gate bool
	}{
		{cmd: Command{z, a1, "refs/heads/roster/dobby/fix"}},
		{cmd: Command{z, a1, "refs/heads/roster/dobby/deep/er"}},
		{cmd: Command{a1, b2, "refs/heads/roster/dobby/fix"}},
		{cmd: Command{b2, a1, "refs/heads/roster/dobby/fix"}, kind: RefuseForce},
		{cmd: Command{b2, a1, "refs/heads/roster/dobby/mine"}},
		{cmd: Command{b2, a1, "refs/heads/roster/dobby/mine"}, pol: func(p Policy) Policy { p.Force = "never"; return p }, kind: RefuseForce},
		{cmd: Command{a1, z, "refs/heads/roster/dobby/mine"}},
		{cmd: Command{a1, z, "refs/heads/roster/dobby/fix"}, kind: RefuseDelete},
		{cmd: Command{a1, z, "refs/heads/main"}, kind: RefuseDelete},
		{cmd: Command{a1, b2, "refs/heads/main"}, kind: RefuseRefProtected},
		{cmd: Command{a1, b2, "refs/heads/release/1.0"}, kind: RefuseRefProtected},
		{cmd: Command{z, a1, "refs/heads/roster/kreacher/x"}, kind: RefuseRefNotGranted},
		{cmd: Command{z, a1, "refs/heads/feature"}, kind: RefuseRefNotGranted},
		{cmd: Command{z, a1, "refs/tags/v1"}, kind: RefuseRefKind},
		{cmd: Command{z, a1, "refs/notes/commits"}, kind: RefuseRefKind},
		{cmd: Command{z, a1, "HEAD"}, kind: RefuseRefKind},
		{cmd: Command{z, a1, "refs/heads/roster/dobby/a..b"}, kind: RefuseRefKind},
		{cmd: Command{a1, b2, "refs/heads/main"}, pol: func(p Policy) Policy { p.Gate = true; return p }, gate: true},
		{cmd: Command{b2, a1, "refs/heads/main"}, pol: func(p Policy) Policy { p.Gate = true; return p }, kind: RefuseForce},
		{cmd: Command{z, a1, "refs/heads/roster/dobby/fix"}, pol: func(p Policy) Policy { p.ReadOnly = true; return p }, kind: RefuseReadOnly},
	} {
		pol := p
		if c.pol != nil {
			pol = c.pol(p)
		}
		v := JudgeRefs(pol, []Command{c.cmd}, ffOnly)[0]
		if v.Kind != c.kind || v.Gate != c.gate {
			t.Errorf("%v: kind %q gate %v (%s), want %q gate %v", c.cmd, v.Kind, v.Gate, v.Reason, c.kind, c.gate)
		}
	}
	// All or nothing: one refused command refuses the others, naming it.
	vs := JudgeRefs(p, []Command{{z, a1, "refs/heads/roster/dobby/ok"}, {a1, b2, "refs/heads/main"}}, ffOnly)
	if vs[0].Kind != RefuseAtomic || !strings.Contains(vs[0].Reason, "refs/heads/main") || vs[1].Kind != RefuseRefProtected {
		t.Fatalf("atomic: %+v", vs)
	}
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pats   []string
		branch string
		want   bool
	}{
		{[]string{"main"}, "main", true},
		{[]string{"main"}, "mainline", false},
		{[]string{"release/*"}, "release/1", true},
		{[]string{"release/*"}, "release/1/hot", true},
		{[]string{"release/*"}, "release", false},
		{[]string{"roster/*/x"}, "roster/a/x", true},
		{[]string{"roster/*/x"}, "roster/a/b/x", false},
	} {
		if got := Match(c.pats, c.branch); got != c.want {
			t.Errorf("Match(%v, %q) = %v", c.pats, c.branch, got)
		}
	}
}

func TestAtLeast(t *testing.T) {
	for _, c := range []struct {
		v    string
		want bool
	}{
		{"git version 2.39.5", true}, {"git version 2.38.0", true}, {"git version 2.37.9", false},
		{"git version 3.0", true}, {"git version 2.4", false}, {"git version 2.38.1.windows.1", true}, {"nonsense", false},
	} {
		if got := AtLeast(c.v, MinGit); got != c.want {
			t.Errorf("AtLeast(%q) = %v", c.v, got)
		}
	}
}
