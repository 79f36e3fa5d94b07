package main

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/repos/gittest"
	"github.com/roster-sh/roster/lib/tms"
)

// TestARunReadsItsSpecAndOrgOnce: one dispatched run, from its host
// cgroup through its preparation (the partition, the gateway, the git
// service) to its pushes journaled and gated, reads the worker's spec and
// org.toml once each and passes them down, so it sees one consistent
// configuration even if a file changes while it starts.
func TestARunReadsItsSpecAndOrgOnce(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "app.git")
	gittest.NewBare(t, repo)
	f := newFixture(t, job, fmt.Sprintf("[[repo]]\nname = \"app\"\nremote = %q\n", repo))
	f.setJob(`set -e
cd ~
git clone -q http://127.0.0.1:3128/git/app app
cd app
echo change > change.txt
git add change.txt
git commit -q -m "the change"
git push -q origin HEAD:roster/dobby/side
git push origin HEAD:main 2> ~/store/push.err
roster-task complete pushed`)
	task, run := f.claim(tms.NewTask{Text: "change it"})
	before := config.ReadCounts()
	code, _, errb := f.box("run", "dobby", "--task", task, "--run", run)
	got := config.ReadCounts()
	if code != 0 {
		t.Fatalf("roster-box run: exit %d: %s", code, errb)
	}
	rec := f.lastRun()
	if rec.Git == nil || len(rec.Git.Pushes) != 2 {
		t.Fatalf("the run did not push to its branch and through a gate: %+v\n%s", rec.Git, f.transcript(rec.ID))
	}
	if specs, orgs := got.Specs-before.Specs, got.Orgs-before.Orgs; specs != 1 || orgs != 1 {
		t.Fatalf("one run read the worker spec %d times and org.toml %d times; want once each", specs, orgs)
	}
}
