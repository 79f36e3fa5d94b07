package repos_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roster-sh/roster/lib/repos"
	"github.com/roster-sh/roster/lib/repos/gittest"
)

// The knowledge bundle is made by git once per commit of main: the next
// run with the same main gets a copy and runs no git, a new main (loose
// or packed) makes a new one and drops the old, and what each bundle
// holds is main as it was, cloned by real git.
func TestKnowledgeBundleIsMadeOncePerMain(t *testing.T) {
	wdir := t.TempDir()
	calls := filepath.Join(wdir, "calls")
	wrapper := filepath.Join(wdir, "git-counting")
	real, err := repos.Find()
	if err != nil {
		t.Skip(err)
	}
	script := "#!/bin/sh\necho \"$*\" >> " + calls + "\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	svc := &repos.Service{Git: &repos.Git{Bin: wrapper}, Worker: "dobby", Dir: filepath.Join(wdir, "repos"), Run: "r1",
		Knowledge: &repos.Knowledge{Dir: filepath.Join(wdir, "knowledge.git")}}
	if err := svc.PrepareKnowledge(context.Background()); err != nil {
		t.Fatal(err)
	}
	bundles := func() int {
		b, _ := os.ReadFile(calls)
		return strings.Count(string(b), "bundle create")
	}
	bundle := func(want string) {
		t.Helper()
		out := filepath.Join(t.TempDir(), "knowledge.bundle")
		if err := svc.BundleKnowledge(context.Background(), out); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o644 {
			t.Fatalf("the bundle: %v %v", st, err)
		}
		clone := filepath.Join(t.TempDir(), "k")
		gittest.Git(t, "", "clone", "-q", "--branch", "main", out, clone)
		if got := gittest.Git(t, clone, "rev-parse", "HEAD"); got != want {
			t.Fatalf("the bundle's main is %s, want %s", got, want)
		}
		cached, _ := filepath.Glob(filepath.Join(wdir, "repos", ".knowledge-*"))
		if len(cached) != 1 || filepath.Base(cached[0]) != ".knowledge-"+want+".bundle" {
			t.Fatalf("cache %v, want main's alone", cached)
		}
	}
	k := svc.Knowledge.Dir
	first := gittest.Git(t, k, "rev-parse", "main")
	bundle(first)
	bundle(first)
	if n := bundles(); n != 1 {
		t.Fatalf("git bundle ran %d times for one main, want 1", n)
	}
	tree := gittest.Git(t, k, "hash-object", "-w", "-t", "tree", "/dev/null")
	next := gittest.Git(t, k, "commit-tree", "-p", first, "-m", "learned", tree)
	gittest.Git(t, k, "update-ref", "refs/heads/main", next)
	bundle(next)
	gittest.Git(t, k, "pack-refs", "--all")
	if _, err := os.Stat(filepath.Join(k, "refs", "heads", "main")); err == nil {
		t.Fatal("main is still a loose ref")
	}
	bundle(next)
	if n := bundles(); n != 2 {
		t.Fatalf("git bundle ran %d times for two mains, want 2", n)
	}
	// HEAD pointed elsewhere: no cache, git each time.
	gittest.Git(t, k, "update-ref", "refs/heads/other", first)
	if err := os.WriteFile(filepath.Join(k, "HEAD"), []byte("ref: refs/heads/other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "b")
	if err := svc.BundleKnowledge(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	if n := bundles(); n != 3 {
		t.Fatalf("a HEAD not on main: git bundle ran %d times, want 3", n)
	}
}
