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

// The pre-receive hook is written when it differs, not at every run.
func TestHookWrittenOnlyWhenItDiffers(t *testing.T) {
	dir := t.TempDir()
	hook := filepath.Join(dir, ".hooks", "pre-receive")
	setup := func(argv ...string) os.FileInfo {
		t.Helper()
		s := &Service{Git: &Git{}, Dir: dir, HookArgv: argv}
		if err := s.setup(); err != nil {
			t.Fatal(err)
		}
		if s.Git.HooksDir != filepath.Join(dir, ".hooks") {
			t.Fatalf("hooks dir %q", s.Git.HooksDir)
		}
		st, err := os.Stat(hook)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	first := setup("/opt/roster-box", "hook")
	if again := setup("/opt/roster-box", "hook"); !os.SameFile(first, again) {
		t.Error("the same hook was written again")
	}
	moved := setup("/usr/bin/roster-box", "hook")
	if os.SameFile(first, moved) {
		t.Fatal("a hook naming another program was not written")
	}
	if b, _ := os.ReadFile(hook); !strings.Contains(string(b), "'/usr/bin/roster-box' 'hook' pre-receive") {
		t.Fatalf("hook:\n%s", b)
	}
	os.Chmod(hook, 0o755)
	if st := setup("/usr/bin/roster-box", "hook"); st.Mode().Perm() != 0o700 {
		t.Errorf("a hook of another mode kept %v", st.Mode())
	}
}
