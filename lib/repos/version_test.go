package repos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `git version` is asked once while the git on PATH stays the same file,
// and again once it changes, or when the cache names another git.
func TestGitVersionIsCachedByTheBinarysIdentity(t *testing.T) {
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	fake := func(v string) {
		script := "#!/bin/sh\necho x >> " + calls + "\necho 'git version " + v + "'\n"
		if err := os.WriteFile(filepath.Join(dir, "git.new"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "git.new"), filepath.Join(dir, "git")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond) // past the racy window: a git changed just now is never cached
	}
	asked := func() int {
		b, _ := os.ReadFile(calls)
		return strings.Count(string(b), "x")
	}
	t.Setenv("PATH", dir)
	cache := filepath.Join(t.TempDir(), "git-version")
	fake("2.39.5")
	for i := 0; i < 3; i++ {
		if v, err := gitVersion(cache); err != nil || v != "git version 2.39.5" {
			t.Fatalf("version %q, %v", v, err)
		}
	}
	if n := asked(); n != 1 {
		t.Fatalf("git version ran %d times for one git, want 1", n)
	}
	fake("2.47.1")
	if v, _ := gitVersion(cache); v != "git version 2.47.1" || asked() != 2 {
		t.Fatalf("a new git: version %q after %d calls", v, asked())
	}
	if err := os.WriteFile(cache, []byte("/usr/bin/git 1:2:3:4:5\ngit version 9.9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v, _ := gitVersion(cache); v != "git version 2.47.1" || asked() != 3 {
		t.Fatalf("a cache of another git: version %q after %d calls", v, asked())
	}
	if v, _ := gitVersion(""); v != "git version 2.47.1" || asked() != 4 {
		t.Fatalf("no cache: version %q after %d calls", v, asked())
	}
}
