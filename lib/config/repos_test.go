package config

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roster-sh/roster/lib/errs"
)

func parseRepoSpec(t *testing.T, body string) (*Worker, error) {
	t.Helper()
	return ParseWorker("dobby", "/h/workers/dobby.toml", []byte("uid = 200001\ncommand = [\"/bin/true\"]\n"+body))
}

func TestRepoDefaults(t *testing.T) {
	w, err := parseRepoSpec(t, "[[repo]]\nname = \"app\"\nremote = \"https://github.com/acme/app.git\"\ncredential = [\"vault:github\", \"env:GITHUB_TOKEN\"]\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Repos) != 1 {
		t.Fatalf("repos %v", w.Repos)
	}
	r := w.Repos[0]
	if r.Host() || r.Force != "own" || r.MaxPush != 100<<20 || r.MaxBlob != 10<<20 || r.MaxFiles != 10000 ||
		strings.Join(r.Push, ",") != "roster/dobby/*" || strings.Join(r.Protect, ",") != "main,master" ||
		strings.Join(r.Credential, ",") != "vault:github,env:GITHUB_TOKEN" {
		t.Fatalf("defaults: %+v", r)
	}
}

func TestRepoHostPathMustBeBare(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	bare, work := filepath.Join(dir, "app.git"), filepath.Join(dir, "work")
	for _, args := range [][]string{{"init", "-q", "--bare", bare}, {"init", "-q", work}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	w, err := parseRepoSpec(t, "[[repo]]\nname = \"app\"\nremote = \""+bare+"/\"\nprotect = [\"main\", \"release/*\"]\nmax_push = \"5MiB\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if r := w.Repos[0]; !r.Host() || r.Remote != bare || r.MaxPush != 5<<20 || strings.Join(r.Protect, ",") != "main,release/*" {
		t.Fatalf("host repo: %+v", r)
	}
	for _, path := range []string{work, filepath.Join(dir, "missing")} {
		_, err := parseRepoSpec(t, "[[repo]]\nname = \"app\"\nremote = \""+path+"\"\n")
		if !errors.Is(err, errs.ErrUsage) || !strings.Contains(err.Error(), "bare git repository") && !strings.Contains(err.Error(), "work tree") {
			t.Fatalf("%s: %v", path, err)
		}
	}
}

// TestRepoRefused: each unusable grant is exit 2 and names the key's line.
func TestRepoRefused(t *testing.T) {
	const ok = "name = \"app\"\nremote = \"https://github.com/acme/app.git\"\n"
	for _, c := range []struct{ body, want string }{
		{"name = \"App\"\nremote = \"https://github.com/a/b\"\n", "repo.name"},
		{"name = \"app.git\"\nremote = \"https://github.com/a/b\"\n", "repo.name"},
		{"name = \"knowledge\"\nremote = \"https://github.com/a/b\"\n", "own knowledge repo"},
		{"name = \"app\"\nremote = \"http://github.com/a/b\"\n", "only to loopback"},
		{"name = \"app\"\nremote = \"ssh://github.com/a/b\"\n", "scheme"},
		{"name = \"app\"\nremote = \"git@github.com:a/b.git\"\n", "repo.remote"},
		{"name = \"app\"\nremote = \"https://x:tok@github.com/a/b\"\n", "no user, token"},
		{"name = \"app\"\nremote = \"https://github.com\"\n", "names no repository"},
		{ok + "credential = [\"vault\"]\n", "credential source"},
		{ok + "push = [\"bad..ref\"]\n", "repo.push"},
		{ok + "protect = [\"has space\"]\n", "repo.protect"},
		{ok + "force = \"always\"\n", "repo.force"},
		{ok + "max_blob = \"lots\"\n", "repo.max_blob"},
		{ok + "max_files = 0\n", "repo.max_files"},
		{ok + "\n[[repo]]\n" + ok, "given twice"},
	} {
		_, err := parseRepoSpec(t, "[[repo]]\n"+c.body)
		if !errors.Is(err, errs.ErrUsage) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "dobby.toml:") {
			t.Errorf("%q: %v, want exit 2 naming %q and the line", c.body, err, c.want)
		}
	}
	_, err := ParseWorker("dobby", "/h/workers/dobby.toml", []byte("uid = 200001\nnetwork = \"none\"\n[[repo]]\n"+ok))
	if !errors.Is(err, errs.ErrUsage) || !strings.Contains(err.Error(), "network = \"gateway\"") {
		t.Errorf("repo without the gateway: %v", err)
	}
	w, err := parseRepoSpec(t, "[[repo]]\nname = \"t\"\nremote = \"http://127.0.0.1:8080/app.git\"\n")
	if err != nil || w.Repos[0].Remote != "http://127.0.0.1:8080/app.git" {
		t.Errorf("loopback http: %v", err)
	}
}
