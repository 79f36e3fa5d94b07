package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/repos"
	"github.com/roster-sh/roster/lib/repos/gittest"
	"github.com/roster-sh/roster/lib/runs"
)

// `show` says what a run pushed; `ls --pushed` finds the runs that
// landed a push, in one repo or any.
func TestShowAndLsTellThePushes(t *testing.T) {
	h := home.Home{Dir: t.TempDir()}
	write := func(id string, git *runs.GitRecord) {
		dir := h.Worker("dobby").Run(id)
		os.MkdirAll(dir, 0o755)
		end := time.Date(2026, 12, 6, 10, 0, 1, 0, time.UTC)
		rec := &runs.Record{ID: id, Worker: "dobby", Kind: "filed", StartedAt: end.Add(-time.Second), EndedAt: &end, Ended: "done", Git: git}
		if err := runs.WriteRecord(dir, rec); err != nil {
			t.Fatal(err)
		}
	}
	const fix = "3f2a1c0d9e8b7a6f5e4d3c2b1a0f9e8d7c6b5a49"
	write("2026-12-06-10-00-00-aaaa", &runs.GitRecord{Pushes: []runs.GitRef{
		{Repo: "app", Ref: "refs/heads/roster/dobby/fix", Old: strings.Repeat("0", 40), New: fix, Outcome: "pushed"},
		{Repo: "app", Ref: "refs/heads/main", Old: fix, New: fix, Outcome: "refused", Refusal: "ref_protected"}},
		Knowledge: &runs.GitKnowledge{Access: "write", Branch: "run/2026-12-06-10-00-00-aaaa", Landed: "9e1d2b4c" + fix[8:], Commits: 2}})
	write("2026-12-06-10-00-02-bbbb", &runs.GitRecord{Pushes: []runs.GitRef{
		{Repo: "lib", Ref: "refs/heads/main", Old: fix, New: fix, Outcome: "refused", Refusal: "ref_protected"}},
		Knowledge: &runs.GitKnowledge{Access: "read"}})
	write("2026-12-06-10-00-04-cccc", nil)
	run := func(args ...string) string { return runOK(t, h, args...) }
	show := run("show", "2026-12-06-10-00-00-aaaa")
	if !strings.Contains(show, "pushed app roster/dobby/fix 3f2a1c0") || !strings.Contains(show, "refused app main 3f2a1c0 (ref_protected)") {
		t.Fatalf("show:\n%s", show)
	}
	if !strings.Contains(show, "knowledge  write, landed 9e1d2b4 (2 commits)\n") {
		t.Fatalf("show's knowledge line:\n%s", show)
	}
	if show := run("show", "2026-12-06-10-00-02-bbbb"); !strings.Contains(show, "knowledge  read\n") {
		t.Fatalf("show's knowledge line of a read-only run:\n%s", show)
	}
	for _, c := range []struct{ repo, want string }{{"*", "aaaa"}, {"app", "aaaa"}, {"lib", ""}} {
		out := run("ls", "--pushed", c.repo, "--json")
		if c.want == "" && out != "" || c.want != "" && (strings.Count(out, "\n") != 1 || !strings.Contains(out, c.want)) {
			t.Errorf("ls --pushed %s:\n%s", c.repo, out)
		}
	}
}

// runOK runs roster-runs in the home h (in this process) and returns its
// stdout; an exit other than 0 fails the test.
func runOK(t *testing.T, h home.Home, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cli.Env{Name: "roster-runs", Stdout: &out, Stderr: &errb, Ctx: context.Background()}
	if code := cli.MainEnv(env, &CLI{}, append([]string{"--home", h.Dir}, args...)); code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errb.String())
	}
	return out.String()
}

// `prune` takes the knowledge repo's run/RUN branches with the runs it
// deleted, each only if its run folder is gone; main, other branches and
// a kept run's branch stay, and a dry run deletes no branch.
func TestPruneTakesTheKnowledgeBranchesOfPrunedRuns(t *testing.T) {
	h := home.Home{Dir: t.TempDir()}
	w := h.Worker("dobby")
	ids := []string{"2026-12-06-10-00-00-aaaa", "2026-12-06-10-00-02-bbbb", "2026-12-06-10-00-04-cccc"}
	for i, id := range ids {
		end := time.Date(2026, 12, 6, 10, 0, 2*i+1, 0, time.UTC)
		rec := &runs.Record{ID: id, Worker: "dobby", Kind: "filed", StartedAt: end.Add(-time.Second), EndedAt: &end, Ended: "done"}
		if err := os.MkdirAll(w.Run(id), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := runs.WriteRecord(w.Run(id), rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := repos.MakeWorkerKnowledge(context.Background(), w.Knowledge(), "dobby"); err != nil {
		t.Fatal(err)
	}
	main := gittest.Git(t, w.Knowledge(), "rev-parse", "main")
	for _, b := range []string{"run/" + ids[0], "run/" + ids[1], "run/" + ids[2], "run/2026-12-01-00-00-00-hand", "topic"} {
		gittest.Git(t, w.Knowledge(), "update-ref", "refs/heads/"+b, main)
	}
	refs := func() string { return gittest.Git(t, w.Knowledge(), "for-each-ref", "--format=%(refname:short)") }
	before := refs()
	runOK(t, h, "prune", "--keep", "1", "--dry-run")
	if got := refs(); got != before {
		t.Fatalf("a dry run changed the branches:\n%s", got)
	}
	if out := runOK(t, h, "prune", "--keep", "1"); out != ids[0]+"\n"+ids[1]+"\n" && out != ids[1]+"\n"+ids[0]+"\n" {
		t.Fatalf("pruned:\n%s", out)
	}
	// The branch of a run whose folder went by hand goes too: its run is gone.
	want := "main\nrun/" + ids[2] + "\ntopic"
	if got := refs(); got != want {
		t.Fatalf("branches left:\n%s\nwant:\n%s", got, want)
	}
}
