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

// A bare "knowledge" repo with one commit on main, and main as the
// folder of objects the host writes for a run (main, objects/pack).
func knowledgeRepo(t *testing.T) (bare, objects, head string) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	bare = filepath.Join(dir, "knowledge.git")
	git(t, dir, "init", "-q", "--bare", "--initial-branch=main", bare)
	work := filepath.Join(dir, "w")
	git(t, dir, "clone", "-q", bare, work)
	os.MkdirAll(filepath.Join(work, "topics"), 0o755)
	os.WriteFile(filepath.Join(work, "notes.md"), []byte("learned\n"), 0o644)
	os.WriteFile(filepath.Join(work, "topics", "git.md"), []byte("alternates\n"), 0o644)
	os.WriteFile(filepath.Join(work, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	git(t, work, "add", ".")
	git(t, work, "commit", "-q", "-m", "learned")
	git(t, work, "push", "-q", "origin", "HEAD:main")
	head = git(t, bare, "rev-parse", "main")
	objects = filepath.Join(dir, "objects-for-run")
	writeObjects(t, bare, objects, head)
	return bare, objects, head
}

// writeObjects writes commit and all it reaches into the folder objects
// as the host does (repos.KnowledgeObjects): objects/main and one pack.
func writeObjects(t *testing.T, bare, objects, commit string) {
	t.Helper()
	pack := filepath.Join(objects, "objects", "pack")
	os.MkdirAll(pack, 0o755)
	cmd := exec.Command("git", "--git-dir="+bare, "pack-objects", "--revs", "-q", filepath.Join(pack, "pack"))
	cmd.Stdin = strings.NewReader(commit + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pack-objects: %v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(objects, "main"), []byte(commit+"\n"), 0o644)
}

// cloneAs checks that dir is what `git clone URL` then `git checkout -b
// branch` leave: main's commit and tree, clean, on branch, origin URL,
// main tracking origin/main, and a repo git works in (a commit moves the
// branch alone).
func cloneAs(t *testing.T, dir, url, branch, head string) {
	t.Helper()
	if got := git(t, dir, "rev-parse", "HEAD"); got != head {
		t.Errorf("HEAD %s, want main's %s", got, head)
	}
	if got := git(t, dir, "branch", "--show-current"); got != branch {
		t.Errorf("on %q, want %q", got, branch)
	}
	if got := git(t, dir, "remote", "get-url", "origin"); got != url {
		t.Errorf("origin %q, want the URL %q", got, url)
	}
	if got := git(t, dir, "rev-parse", "origin/main", "origin/HEAD"); got != head+"\n"+head {
		t.Errorf("origin/main and origin/HEAD: %q", got)
	}
	if got := git(t, dir, "rev-parse", "--abbrev-ref", "main@{upstream}"); got != "origin/main" {
		t.Errorf("main tracks %q", got)
	}
	if got := git(t, dir, "status", "--porcelain"); got != "" {
		t.Errorf("the clone is not clean:\n%s", got)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "topics", "git.md")); err != nil || string(b) != "alternates\n" {
		t.Errorf("topics/git.md: %q %v", b, err)
	}
	if st, err := os.Stat(filepath.Join(dir, "run.sh")); err != nil || st.Mode().Perm()&0o100 == 0 {
		t.Errorf("run.sh lost its mode: %v %v", st, err)
	}
	git(t, dir, "fsck", "--no-progress")
	git(t, dir, "-c", "user.name=w", "-c", "user.email=w@x", "commit", "-q", "--allow-empty", "-m", "learned")
	if got := git(t, dir, "rev-parse", "HEAD~1"); got != head {
		t.Errorf("after a commit, HEAD~1 is %s, want %s", got, head)
	}
	if got := git(t, dir, "rev-parse", "main"); branch != "main" && got != head {
		t.Errorf("a commit on %s moved main to %s", branch, got)
	}
}

// From the run's objects (with an unreachable URL: nothing is fetched)
// the clone is as git's own, and origin is the URL (fetches and pushes
// go there); missing or broken objects fall back to cloning the URL.
func TestKnowledgeFromObjectsOrTheURL(t *testing.T) {
	bare, objects, head := knowledgeRepo(t)
	env := append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	gone := "http://127.0.0.1:9/git/knowledge"
	for _, branch := range []string{"run/r1", ""} {
		dir := filepath.Join(t.TempDir(), "knowledge")
		if err := Knowledge(gone, dir, branch, objects, env); err != nil {
			t.Fatalf("the clone did not come from the objects: %v", err)
		}
		want := branch
		if want == "" {
			want = "main"
		}
		cloneAs(t, dir, gone, want, head)
		if b, _ := os.ReadFile(filepath.Join(dir, ".git", "objects", "info", "alternates")); string(b) != filepath.Join(objects, "objects")+"\n" {
			t.Errorf("alternates %q", b)
		}
	}
	// A push from such a clone carries the objects it borrows: the bare
	// repo gets a new main whose parent came from the objects.
	dir := filepath.Join(t.TempDir(), "knowledge")
	if err := Knowledge(bare, dir, "run/r2", objects, env); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "more.md"), []byte("more\n"), 0o644)
	git(t, dir, "add", "more.md")
	git(t, dir, "-c", "user.name=w", "-c", "user.email=w@x", "commit", "-q", "-m", "more")
	git(t, dir, "push", "-q", "origin", "HEAD:main")
	if got := git(t, bare, "rev-parse", "main~1"); got != head {
		t.Errorf("pushed main~1 is %s, want %s", got, head)
	}
	git(t, bare, "fsck", "--no-progress")

	broken := t.TempDir()
	writeObjects(t, bare, broken, head)
	os.WriteFile(filepath.Join(broken, "main"), []byte("not a commit\n"), 0o644)
	packless := t.TempDir()
	writeObjects(t, bare, packless, head)
	os.RemoveAll(filepath.Join(packless, "objects"))
	for name, o := range map[string]string{"no objects": "", "missing": "/nonexistent/knowledge", "broken main": broken, "no pack": packless} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "knowledge")
			if err := Knowledge(bare, dir, "run/r1", o, env); err != nil {
				t.Fatal(err)
			}
			cloneAs(t, dir, bare, "run/r1", git(t, bare, "rev-parse", "main"))
			if _, err := os.Stat(filepath.Join(dir, ".git", "objects", "info", "alternates")); err == nil {
				t.Error("a clone of the URL borrows objects")
			}
		})
	}
	// Neither: the error says why.
	if err := Knowledge("/nonexistent/k.git", filepath.Join(t.TempDir(), "k"), "", "", env); err == nil || !strings.Contains(err.Error(), "git clone") {
		t.Errorf("err %v", err)
	}
}

// fromObjects writes only a branch name it can put in a file as is.
func TestPlainBranch(t *testing.T) {
	for b, want := range map[string]bool{"run/2026-12-07-20-42-36-uk4v": true, "topic": true, "a/b_c.d": true,
		"": false, "main": false, "HEAD": false, "../x": false, "/abs": false, "a//b": false, ".hidden": false,
		"x.lock": false, "a b": false, "a\nb": false, "a~1": false, "a:b": false, "x/": false,
		"a..b": false, "a.": false, "run/x.": false} {
		if got := plainBranch(b); got != want {
			t.Errorf("plainBranch(%q) = %v, want %v", b, got, want)
		}
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
	for _, b := range []string{"../x", "/abs", "a b", "x.lock"} {
		if err := startBranch(dir, b); err == nil {
			t.Errorf("made branch %q", b)
		}
	}
	git(t, dir, "pack-refs", "--all")
	if err := startBranch(dir, "run/r3"); err == nil {
		t.Error("main packed: made a branch")
	}
}

// A SHA-256 repo's objects make a clone git reads as SHA-256 (its config
// says so), as a clone of it would be.
func TestKnowledgeFromSHA256Objects(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	work := filepath.Join(dir, "w")
	git(t, dir, "init", "-q", "--object-format=sha256", "--initial-branch=main", work)
	os.MkdirAll(filepath.Join(work, "topics"), 0o755)
	os.WriteFile(filepath.Join(work, "topics", "git.md"), []byte("alternates\n"), 0o644)
	os.WriteFile(filepath.Join(work, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	git(t, work, "add", ".")
	git(t, work, "commit", "-q", "-m", "learned")
	source := filepath.Join(work, ".git") // git 2.39 cannot push SHA-256 into a bare repo; its own objects serve
	head := git(t, work, "rev-parse", "main")
	if len(head) != 64 {
		t.Fatalf("not a SHA-256 repo: %s", head)
	}
	objects := filepath.Join(dir, "objects-for-run")
	writeObjects(t, source, objects, head)
	clone := filepath.Join(t.TempDir(), "knowledge")
	gone := "http://127.0.0.1:9/git/knowledge"
	if err := Knowledge(gone, clone, "run/r1", objects, append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")); err != nil {
		t.Fatalf("the clone did not come from the objects: %v", err)
	}
	cloneAs(t, clone, gone, "run/r1", head)
	if got := git(t, clone, "rev-parse", "--show-object-format"); got != "sha256" {
		t.Errorf("object format %q", got)
	}
}
