package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roster-sh/roster/lib/repos"
	"github.com/roster-sh/roster/lib/repos/gittest"
	"github.com/roster-sh/roster/lib/tms"
)

const repoToken = "ghp_REALrepoTokenNeverInABox0123456789"

// TestGitBoxClonesAndPushesWithoutTheToken: a real git in a real box
// clones a remote by its real URL (its git config sends it through the
// gateway), pushes its own branch, which lands on the remote, is refused
// main with the reason git prints, and never sees the token.
func TestGitBoxClonesAndPushesWithoutTheToken(t *testing.T) {
	remote := gittest.New(t, repoToken)
	bare := remote.Bare(t, "app")
	url := remote.URL + "/app.git"
	f := newFixture(t, job, fmt.Sprintf("[[repo]]\nname = \"app\"\nremote = %q\ncredential = [\"vault:github\"]\n", url))
	putVaultKey(t, f, "github", repoToken)
	f.setJob(fmt.Sprintf(`set -e
cd ~
git clone -q %s app
cd app
git checkout -q -b roster/dobby/fix
echo fixed > fix.txt
git add fix.txt
git commit -q -m "the fix"
git push -q origin roster/dobby/fix
git rev-parse HEAD > ~/store/head
if git push origin HEAD:main 2> ~/store/main.err; then echo PUSHED > ~/store/main.ok; fi
env > ~/store/env.txt
cat ~/self/gitconfig > ~/store/gitconfig
cp ~/self/briefing.md ~/store/briefing.md
if grep -rqs 'REALrepoToke[n]' /home /etc /tmp /run /opt 2>/dev/null; then echo FOUND > ~/store/leak.txt; fi
roster-task complete pushed`, url))
	rec, _ := f.dispatch(tms.NewTask{Text: "fix it"})
	if rec.Attested != tms.AttestedCompleted {
		lg, _ := os.ReadFile(filepath.Join(f.w.Run(rec.ID), "gateway.jsonl"))
		t.Fatalf("attested %q\n%s\n%s", rec.Attested, f.transcript(rec.ID), lg)
	}
	head, _ := os.ReadFile(filepath.Join(f.w.Store(), "head"))
	if got := gittest.Git(t, bare, "rev-parse", "roster/dobby/fix"); got != strings.TrimSpace(string(head)) {
		t.Fatalf("the remote has %q, the box pushed %q", got, head)
	}
	if _, err := os.Stat(filepath.Join(f.w.Store(), "main.ok")); err == nil {
		t.Fatal("the push to main went through")
	}
	mainErr, _ := os.ReadFile(filepath.Join(f.w.Store(), "main.err"))
	if !strings.Contains(string(mainErr), "roster: ref_protected: main is protected") {
		t.Fatalf("git did not print the refusal:\n%s", mainErr)
	}
	for _, p := range []string{"env.txt", "gitconfig", "briefing.md", "leak.txt"} {
		data, _ := os.ReadFile(filepath.Join(f.w.Store(), p))
		if strings.Contains(string(data), "REALrepoToken") || p == "leak.txt" && len(data) > 0 {
			t.Errorf("the token is visible in the box (%s)", p)
		}
	}
	gc, _ := os.ReadFile(filepath.Join(f.w.Store(), "gitconfig"))
	if !strings.Contains(string(gc), "insteadOf = "+url) || !strings.Contains(string(gc), "email = dobby@roster.invalid") {
		t.Errorf("the box's git config:\n%s", gc)
	}
	brief, _ := os.ReadFile(filepath.Join(f.w.Store(), "briefing.md"))
	if !strings.Contains(string(brief), "## Git repositories") || !strings.Contains(string(brief), "`roster/dobby/*`") {
		t.Errorf("the briefing does not tell the repos:\n%s", brief)
	}
	filepath.Walk(f.w.Dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && !strings.Contains(p, "/vault/") {
			if data, _ := os.ReadFile(p); strings.Contains(string(data), repoToken) {
				t.Errorf("the token is in the data tree: %s", p)
			}
		}
		return nil
	})
	if rec.Git == nil || len(rec.Git.Pushes) != 2 {
		t.Fatalf("run.json git: %+v", rec.Git)
	}
	byRef := map[string]string{}
	for _, p := range rec.Git.Pushes {
		byRef[p.Ref] = p.Outcome
	}
	if byRef["refs/heads/roster/dobby/fix"] != repos.Pushed || byRef["refs/heads/main"] != repos.Refused {
		t.Fatalf("run.json git pushes: %+v", rec.Git.Pushes)
	}
}

// rosterTask runs the suite's roster-task (built for these tests) on f's
// home.
func (f *fixture) rosterTask(args ...string) (string, int) {
	f.t.Helper()
	cmd := exec.Command(filepath.Join(os.Getenv("ROSTER_EXEC_PATH"), "roster-task"), append([]string{"--home", f.h.Dir}, args...)...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		f.t.Fatal(err)
	}
	return string(out), code
}

// TestGitHostRepoLandsOnlyThroughAGate: a push to a host repo's main is
// held for review (the task goes needs-review, main does not move, the
// commits wait in a pending ref), its own branch lands at once; gate show
// tells what it would land; approve moves main fast-forward only; a gate
// whose base moved meanwhile is refused not_fast_forward and recorded
// denied; deny drops the pending ref.
func TestGitHostRepoLandsOnlyThroughAGate(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "app.git")
	gittest.NewBare(t, repo)
	base := gittest.Git(t, repo, "rev-parse", "main")
	f := newFixture(t, job, fmt.Sprintf("[[repo]]\nname = \"app\"\nremote = %q\nwake_on_resolve = true\n", repo))
	f.setJob(`set -e
cd ~
git clone -q http://127.0.0.1:3128/git/app app
cd app
echo "change $ROSTER_RUN" > change.txt
git add change.txt
git commit -q -m "the change"
git push origin HEAD:main 2> ~/store/push.err
git push -q origin HEAD:roster/dobby/side-$ROSTER_RUN
git rev-parse HEAD > ~/store/head
roster-task complete pushed`)
	var lastRun string
	gated := func() (*tms.Task, string) {
		rec, task := f.dispatch(tms.NewTask{Text: "change it"})
		pushErr, _ := os.ReadFile(filepath.Join(f.w.Store(), "push.err"))
		if !strings.Contains(string(pushErr), "waits for review (gate g1)") {
			t.Fatalf("git did not say the push waits:\n%s\n%s", pushErr, f.transcript(rec.ID))
		}
		head, _ := os.ReadFile(filepath.Join(f.w.Store(), "head"))
		lastRun = rec.ID
		tk, _, err := f.part.ShowEnded(context.Background(), task)
		if err != nil {
			t.Fatal(err)
		}
		if tk.State != tms.NeedsReview || len(tk.Gates) != 1 || tk.Gates[0].Kind != tms.GateRepoPush {
			ev, _ := json.Marshal(rec)
			t.Fatalf("task %s: %+v\n%s\n%s", tk.State, tk.Gates, ev, f.transcript(rec.ID))
		}
		return &tk, strings.TrimSpace(string(head))
	}

	tk, head := gated()
	if got := gittest.Git(t, repo, "rev-parse", "main"); got != base {
		t.Fatal("main moved before review")
	}
	if got := gittest.Git(t, repo, "rev-parse", "roster/dobby/side-"+lastRun); got != head {
		t.Fatal("the worker's own branch did not land at once")
	}
	if got := gittest.Git(t, repo, "rev-parse", tk.Gates[0].Push.Pending); got != head {
		t.Fatalf("the pending ref holds %q", got)
	}
	out, code := f.rosterTask("gate", "show", tk.ID, "g1", "--patch")
	if code != 0 || !strings.Contains(out, "the change") || !strings.Contains(out, "change.txt") || !strings.Contains(out, "+change ") {
		t.Fatalf("gate show: %d\n%s", code, out)
	}
	if out, code := f.rosterTask("gate", "resolve", tk.ID, "g1", "approve"); code != 0 {
		t.Fatalf("approve: %d %s", code, out)
	}
	if got := gittest.Git(t, repo, "rev-parse", "main"); got != head {
		t.Fatalf("approved: main at %s, want %s", got, head)
	}
	if out := gittest.Git(t, repo, "for-each-ref", "refs/roster/"); out != "" {
		t.Fatalf("the pending ref outlived the approval: %s", out)
	}

	// Stale: main moves on the host after the push; the approval refuses.
	tk, _ = gated()
	work := filepath.Join(t.TempDir(), "op")
	gittest.Git(t, "", "clone", "-q", repo, work)
	os.WriteFile(filepath.Join(work, "op.txt"), []byte("operator\n"), 0o644)
	gittest.Git(t, work, "add", "op.txt")
	gittest.Git(t, work, "commit", "-q", "-m", "operator's own")
	gittest.Git(t, work, "push", "-q", "origin", "main")
	moved := gittest.Git(t, repo, "rev-parse", "main")
	out, code = f.rosterTask("gate", "resolve", tk.ID, "g1", "approve")
	if code != 13 || !strings.Contains(out, "not_fast_forward") {
		t.Fatalf("stale approve: %d %s", code, out)
	}
	if got := gittest.Git(t, repo, "rev-parse", "main"); got != moved {
		t.Fatal("a stale approval moved main")
	}
	after, _, _ := f.part.ShowEnded(context.Background(), tk.ID)
	if after.Gates[0].State != tms.GateDenied || !strings.Contains(after.Gates[0].Why, "not_fast_forward") {
		t.Fatalf("stale gate: %+v", after.Gates[0])
	}

	// Deny: the pending ref goes, main stays.
	tk, _ = gated()
	if out, code := f.rosterTask("gate", "resolve", tk.ID, "g1", "deny", "--why", "not now"); code != 0 {
		t.Fatalf("deny: %d %s", code, out)
	}
	if out := gittest.Git(t, repo, "for-each-ref", "refs/roster/"); out != "" || gittest.Git(t, repo, "rev-parse", "main") != moved {
		t.Fatalf("deny left %q", out)
	}
}

// TestGitAdhocRunCannotGateAPush: an ad-hoc run has no task to hold a
// gate on, so its push to a host repo's protected ref is refused, and its
// own branch still lands.
func TestGitAdhocRunCannotGateAPush(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "app.git")
	gittest.NewBare(t, repo)
	base := gittest.Git(t, repo, "rev-parse", "main")
	f := newFixture(t, job, fmt.Sprintf("[[repo]]\nname = \"app\"\nremote = %q\n", repo))
	f.setJob(`cd ~ && git clone -q http://127.0.0.1:3128/git/app app && cd app &&
echo x > x.txt && git add x.txt && git commit -q -m x &&
git push -q origin HEAD:roster/dobby/adhoc &&
if git push origin HEAD:main 2> ~/store/main.err; then echo PUSHED > ~/store/main.ok; fi`)
	code, _, errb := f.box("run", "dobby")
	if code != 0 {
		t.Fatalf("ad-hoc run: %d %s", code, errb)
	}
	mainErr, _ := os.ReadFile(filepath.Join(f.w.Store(), "main.err"))
	if _, err := os.Stat(filepath.Join(f.w.Store(), "main.ok")); err == nil || !strings.Contains(string(mainErr), "roster: ref_protected") {
		t.Fatalf("the ad-hoc push to main: %s", mainErr)
	}
	if gittest.Git(t, repo, "rev-parse", "main") != base {
		t.Fatal("main moved")
	}
	gittest.Git(t, repo, "rev-parse", "--verify", "roster/dobby/adhoc")
}
