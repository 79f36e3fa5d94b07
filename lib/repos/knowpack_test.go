package repos_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/repos"
	"github.com/roster-sh/roster/lib/repos/gittest"
)

// The knowledge pack is made by git once per commit of main: the next run
// with the same main gets a copy and runs no git, a new main (loose or
// packed) makes a new one and drops the old (and a bundle of the earlier
// cache), and what each run gets is main as it was, read by real git
// through alternates as the box's clone reads it.
func TestKnowledgeObjectsAreMadeOncePerMain(t *testing.T) {
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
	reposDir := filepath.Join(wdir, "repos")
	svc := &repos.Service{Git: &repos.Git{Bin: wrapper}, Worker: "dobby", Dir: reposDir, Run: "r1",
		Knowledge: &repos.Knowledge{Dir: filepath.Join(wdir, "knowledge.git")}}
	if err := svc.PrepareKnowledge(context.Background()); err != nil {
		t.Fatal(err)
	}
	count := func(what string) int {
		b, _ := os.ReadFile(calls)
		return strings.Count(string(b), what)
	}
	objects := func(want string) {
		t.Helper()
		out := filepath.Join(t.TempDir(), "knowledge")
		if err := svc.KnowledgeObjects(context.Background(), out); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(out, "main")); err != nil || string(b) != want+"\n" {
			t.Fatalf("main file %q %v, want %s", b, err, want)
		}
		for _, d := range []string{out, filepath.Join(out, "objects", "pack")} {
			if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o755 {
				t.Fatalf("%s: %v %v, want 0755", d, st, err)
			}
		}
		packs, _ := filepath.Glob(filepath.Join(out, "objects", "pack", "pack-*"))
		for _, p := range packs {
			if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
				t.Fatalf("%s is %v, want 0644 (the box user reads it)", p, st.Mode())
			}
		}
		if len(packs) != 2 {
			t.Fatalf("packs %v, want one pack and its index", packs)
		}
		// A repo borrowing them has main and everything it reaches.
		b := filepath.Join(t.TempDir(), "b.git")
		gittest.Git(t, "", "init", "-q", "--bare", b)
		os.WriteFile(filepath.Join(b, "objects", "info", "alternates"), []byte(filepath.Join(out, "objects")+"\n"), 0o644)
		gittest.Git(t, b, "update-ref", "refs/heads/main", want)
		gittest.Git(t, b, "fsck", "--no-progress", "--connectivity-only")
		var cached []string
		all, _ := filepath.Glob(filepath.Join(reposDir, ".knowledge-*"))
		for _, c := range all {
			if !strings.HasPrefix(filepath.Base(c), ".knowledge-new-") || filepath.Base(c) == ".knowledge-new-123" {
				cached = append(cached, c)
			}
		}
		if len(cached) != 1 || filepath.Base(cached[0]) != ".knowledge-"+want {
			t.Fatalf("cache %v, want main's alone", cached)
		}
	}
	k := svc.Knowledge.Dir
	first := gittest.Git(t, k, "rev-parse", "main")
	// An earlier version's bundle cache and a pack a crash left long ago
	// are dropped; one being made now is not.
	os.WriteFile(filepath.Join(reposDir, ".knowledge-"+first+".bundle"), []byte("old"), 0o600)
	os.MkdirAll(filepath.Join(reposDir, ".knowledge-new-123"), 0o700)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(reposDir, ".knowledge-new-123"), old, old)
	objects(first)
	objects(first)
	if n := count("pack-objects"); n != 1 {
		t.Fatalf("git pack-objects ran %d times for one main, want 1", n)
	}
	tree := gittest.Git(t, k, "hash-object", "-w", "-t", "tree", "/dev/null")
	next := gittest.Git(t, k, "commit-tree", "-p", first, "-m", "learned", tree)
	gittest.Git(t, k, "update-ref", "refs/heads/main", next)
	making := filepath.Join(reposDir, ".knowledge-new-456")
	os.MkdirAll(making, 0o700)
	objects(next) // the one being made now stays
	if _, err := os.Stat(making); err != nil {
		t.Fatal("a pack being made now was dropped")
	}
	os.RemoveAll(making)
	gittest.Git(t, k, "pack-refs", "--all")
	if _, err := os.Stat(filepath.Join(k, "refs", "heads", "main")); err == nil {
		t.Fatal("main is still a loose ref")
	}
	objects(next)
	if n := count("pack-objects"); n != 2 {
		t.Fatalf("git pack-objects ran %d times for two mains, want 2", n)
	}
	// An unreadable cache (its index gone) is made again.
	idx, _ := filepath.Glob(filepath.Join(reposDir, ".knowledge-"+next, "*.idx"))
	os.Remove(idx[0])
	objects(next)
	if n := count("pack-objects"); n != 3 {
		t.Fatalf("a broken cache: git pack-objects ran %d times, want 3", n)
	}
	// HEAD pointed elsewhere: main is asked of git, and its cache serves.
	gittest.Git(t, k, "update-ref", "refs/heads/other", first)
	if err := os.WriteFile(filepath.Join(k, "HEAD"), []byte("ref: refs/heads/other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	objects(next)
	if n, m := count("pack-objects"), count("rev-parse"); n != 3 || m != 1 {
		t.Fatalf("a HEAD not on main: pack-objects %d, rev-parse %d, want 3 and 1", n, m)
	}
}
