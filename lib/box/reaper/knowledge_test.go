package reaper

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// A bare "knowledge" repo with one commit on main; its bundle.
func knowledgeRepo(t *testing.T) (bare, bundle, head string) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	bare = filepath.Join(dir, "knowledge.git")
	git(t, dir, "init", "-q", "--bare", "--initial-branch=main", bare)
	work := filepath.Join(dir, "w")
	git(t, dir, "clone", "-q", bare, work)
	os.WriteFile(filepath.Join(work, "notes.md"), []byte("learned\n"), 0o644)
	git(t, work, "add", "notes.md")
	git(t, work, "commit", "-q", "-m", "learned")
	git(t, work, "push", "-q", "origin", "HEAD:main")
	bundle = filepath.Join(dir, "knowledge.bundle")
	git(t, bare, "bundle", "create", "--quiet", bundle, "HEAD", "refs/heads/main")
	return bare, bundle, git(t, bare, "rev-parse", "main")
}

// From the bundle: the clone has main's commit, is on the run's branch,
// and its origin is the URL (fetches and pushes go there, not to the
// bundle); a missing or broken bundle falls back to cloning the URL.
func TestKnowledgeFromABundleOrTheURL(t *testing.T) {
	bare, bundle, head := knowledgeRepo(t)
	env := append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	bad := filepath.Join(t.TempDir(), "bad.bundle")
	os.WriteFile(bad, []byte("# v2 git bundle\nnot one\n"), 0o644)
	for name, b := range map[string]string{"bundle": bundle, "no bundle": "", "missing": "/nonexistent/k.bundle", "broken": bad} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "knowledge")
			if err := Knowledge(bare, dir, "run/r1", b, env); err != nil {
				t.Fatal(err)
			}
			if got := git(t, dir, "rev-parse", "HEAD"); got != head {
				t.Errorf("HEAD %s, want main's %s", got, head)
			}
			if got := git(t, dir, "branch", "--show-current"); got != "run/r1" {
				t.Errorf("on %q, want run/r1", got)
			}
			if got := git(t, dir, "remote", "get-url", "origin"); got != bare {
				t.Errorf("origin %q, want the URL %q", got, bare)
			}
			if got := git(t, dir, "rev-parse", "origin/main"); got != head {
				t.Errorf("origin/main %s", got)
			}
			if got := git(t, dir, "status", "--porcelain"); got != "" {
				t.Errorf("the clone is not clean:\n%s", got)
			}
			// The branch is git's own: a commit on it moves it, main stays.
			git(t, dir, "-c", "user.name=w", "-c", "user.email=w@x", "commit", "-q", "--allow-empty", "-m", "learned")
			if got := git(t, dir, "rev-parse", "run/r1~1", "main"); got != head+"\n"+head {
				t.Errorf("after a commit, run/r1~1 and main are %q, want %s twice", got, head)
			}
		})
	}
	// The bundle is what is read: an unreachable URL still clones, and
	// stays origin.
	gone := "http://127.0.0.1:9/git/knowledge"
	dir0 := filepath.Join(t.TempDir(), "knowledge")
	if err := Knowledge(gone, dir0, "run/r2", bundle, env); err != nil {
		t.Fatalf("the clone did not come from the bundle: %v", err)
	}
	if got := git(t, dir0, "remote", "get-url", "origin"); got != gone {
		t.Errorf("origin %q, want %q", got, gone)
	}
	if got := git(t, dir0, "rev-parse", "HEAD"); got != head {
		t.Errorf("HEAD %s, want %s", got, head)
	}
	// Read-only: no branch, on main.
	dir := filepath.Join(t.TempDir(), "knowledge")
	if err := Knowledge(bare, dir, "", bundle, env); err != nil {
		t.Fatal(err)
	}
	if got := git(t, dir, "branch", "--show-current"); got != "main" {
		t.Errorf("a read-only clone is on %q, want main", got)
	}
	// Neither: the error says why.
	if err := Knowledge("/nonexistent/k.git", filepath.Join(t.TempDir(), "k"), "", "", env); err == nil || !strings.Contains(err.Error(), "git clone") {
		t.Errorf("err %v", err)
	}
}

// startBranch does `checkout -b` from a fresh clone's main without git,
// and refuses anything else (the caller then asks git).
func TestStartBranchOnlyFromAFreshMain(t *testing.T) {
	bare, _, head := knowledgeRepo(t)
	dir := filepath.Join(t.TempDir(), "k")
	git(t, "", "clone", "-q", bare, dir)
	if err := startBranch(dir, "run/r1"); err != nil {
		t.Fatal(err)
	}
	if got := git(t, dir, "symbolic-ref", "HEAD"); got != "refs/heads/run/r1" {
		t.Fatalf("HEAD %s", got)
	}
	if got := git(t, dir, "rev-parse", "run/r1"); got != head {
		t.Fatalf("run/r1 at %s, want %s", got, head)
	}
	if err := startBranch(dir, "run/r2"); err == nil {
		t.Error("HEAD not on main: made a branch")
	}
	git(t, dir, "checkout", "-q", "main")
	if err := startBranch(dir, "run/r1"); err == nil {
		t.Error("made a branch that exists")
	}
	for _, b := range []string{"../x", "/abs"} {
		if err := startBranch(dir, b); err == nil {
			t.Errorf("made branch %q", b)
		}
	}
	git(t, dir, "pack-refs", "--all")
	if err := startBranch(dir, "run/r3"); err == nil {
		t.Error("main packed: made a branch")
	}
}
