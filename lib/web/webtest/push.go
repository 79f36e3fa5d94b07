package webtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

// HeldPush is a push waiting in a repo_push gate.
type HeldPush struct {
	Repo string // the host repo (bare), the worker's [[repo]] "app"
	Task string // the needs-review task holding gate g1
	Base string // main before
	Head string // the pushed commit
}

// HeldPush makes what the gateway's git route leaves for a push to a
// host repo's protected ref: a host repo granted in the worker's spec,
// the pushed commit waiting under refs/roster/pending/, and the gate
// opened with tms.OpenRepoGate on the claimed task; then the run's end
// attested, so the task needs review. The git here is the test's own
// (the commit and the push stand in for the box's); the console's
// diff and landing use roster's hardened git (lib/repos).
func (b *Built) HeldPush(ctx context.Context, dir string) (*HeldPush, error) {
	hp := &HeldPush{Repo: filepath.Join(dir, "app.git")}
	work := filepath.Join(dir, "work")
	gitHome := filepath.Join(dir, "githome")
	if err := os.MkdirAll(gitHome, 0o700); err != nil {
		return nil, err
	}
	git := func(in string, args ...string) (string, error) {
		c := exec.CommandContext(ctx, "git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.org"}, args...)...)
		c.Dir = in
		c.Env = append(os.Environ(), "HOME="+gitHome, "GIT_CONFIG_NOSYSTEM=1")
		out, err := c.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out)), nil
	}
	steps := [][]string{
		{dir, "init", "-q", "--bare", "-b", "main", hp.Repo},
		{dir, "init", "-q", "-b", "main", work},
	}
	for _, s := range steps {
		if _, err := git(s[0], s[1:]...); err != nil {
			return nil, err
		}
	}
	if err := b.commit(git, work, "README", "hello\n", "first"); err != nil {
		return nil, err
	}
	if _, err := git(work, "push", "-q", hp.Repo, "main"); err != nil {
		return nil, err
	}
	hp.Base, _ = git(work, "rev-parse", "HEAD")
	if err := b.commit(git, work, "change.txt", "the change "+Hostile+"\n", "the change"); err != nil {
		return nil, err
	}
	hp.Head, _ = git(work, "rev-parse", "HEAD")
	return hp, b.gateThePush(ctx, git, work, hp)
}

func (b *Built) commit(git func(string, ...string) (string, error), work, file, text, msg string) error {
	if err := os.WriteFile(filepath.Join(work, file), []byte(text), 0o644); err != nil {
		return err
	}
	if _, err := git(work, "add", file); err != nil {
		return err
	}
	_, err := git(work, "commit", "-q", "-m", msg)
	return err
}

func (b *Built) gateThePush(ctx context.Context, git func(string, ...string) (string, error), work string, hp *HeldPush) error {
	spec, err := os.OpenFile(b.Home.SpecFile(b.Worker), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	fmt.Fprintf(spec, "\n[[repo]]\nname = \"app\"\nremote = %q\n", hp.Repo)
	if err := spec.Close(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(b.Home.Worker(b.Worker).Dir, "repos", ".home"), 0o700); err != nil {
		return err
	}
	p, err := tms.Open(b.Home, b.Worker, tms.Options{})
	if err != nil {
		return err
	}
	t, err := p.Add(ctx, tms.NewTask{Text: "fix the app"})
	if err != nil {
		return err
	}
	hp.Task = t.ID
	run := home.NewRunID(time.Now())
	if _, err := p.Claim(ctx, t.ID, run); err != nil {
		return err
	}
	if err := os.MkdirAll(b.Home.Worker(b.Worker).Run(run), 0o700); err != nil {
		return err
	}
	pending := "refs/roster/pending/" + run + "-1"
	if _, err := git(work, "push", "-q", hp.Repo, "HEAD:"+pending); err != nil {
		return err
	}
	push := tms.RepoPush{Repo: "app", Ref: "refs/heads/main", Old: hp.Base, New: hp.Head, Pending: pending}
	if _, err := p.OpenRepoGate(ctx, t.ID, run, "push app main ("+hp.Head[:7]+")", false, push); err != nil {
		return err
	}
	_, err = p.Attest(ctx, t.ID, run, runs.Evidence{Report: "complete"})
	return err
}
