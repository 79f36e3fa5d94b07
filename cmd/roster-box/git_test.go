package main

import (
	"fmt"
	"os"
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
