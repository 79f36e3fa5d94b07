package gateway

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/repos"
	"github.com/roster-sh/roster/lib/repos/gittest"
)

const gitToken = "ghp_rosterTestToken0123456789abcdef"

// gitRig is a gateway serving one [[repo]] grant of a real git remote
// (git http-backend on 127.0.0.1, checking gitToken), reached by a real
// git client over loopback TCP as a box's git reaches 127.0.0.1:3128.
type gitRig struct {
	*rig
	remote *gittest.Server
	bare   string // the remote's repo
	url    string // the repo through the gateway
	svc    *repos.Service
}

func newGitRig(t *testing.T, grant func(*config.Repo)) *gitRig {
	t.Helper()
	remote := gittest.New(t, gitToken)
	bare := remote.Bare(t, "app")
	r := config.Repo{Name: "app", Remote: remote.URL + "/app.git", Credential: []string{"env:GITHUB_TOKEN"},
		Push: []string{"roster/dobby/*"}, Protect: []string{"main", "master"}, Force: "own",
		MaxPush: config.DefaultRepoMaxPush, MaxBlob: config.DefaultRepoMaxBlob, MaxFiles: config.DefaultRepoMaxFiles}
	if grant != nil {
		grant(&r)
	}
	svc := &repos.Service{Git: &repos.Git{}, Worker: "dobby", Dir: filepath.Join(t.TempDir(), "repos"), Repos: []config.Repo{r},
		Token:    func(config.Repo) (string, error) { return gitToken, nil },
		Secrets:  func() []repos.Secret { return []repos.Secret{{Source: "repo app (env:GITHUB_TOKEN)", Value: gitToken}} },
		HookArgv: []string{os.Args[0]}}
	rg := newRig(t, Config{Git: svc})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go rg.g.Serve(l)
	return &gitRig{rig: rg, remote: remote, bare: bare, url: "http://" + l.Addr().String() + "/git/app", svc: svc}
}

// clone clones the repo through the gateway into a new folder.
func (g *gitRig) clone(t *testing.T) string {
	t.Helper()
	work := filepath.Join(t.TempDir(), "work")
	gittest.Git(t, "", "clone", "-q", g.url, work)
	return work
}

// push runs git push in work and returns its output and whether it
// succeeded.
func push(t *testing.T, work string, args ...string) (string, bool) {
	t.Helper()
	out, err := gittest.Cmd(work, append([]string{"push"}, args...)...).CombinedOutput()
	return string(out), err == nil
}

func commitFile(t *testing.T, work, name, body string) string {
	t.Helper()
	p := filepath.Join(work, name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, work, "add", "-A")
	gittest.Git(t, work, "commit", "-q", "-m", "change "+name)
	return gittest.Git(t, work, "rev-parse", "HEAD")
}

func TestGitCloneAndPushABranch(t *testing.T) {
	g := newGitRig(t, nil)
	work := g.clone(t)
	if got := gittest.Git(t, work, "log", "--format=%s", "-1"); got != "first" {
		t.Fatalf("clone through the gateway: head %q", got)
	}
	gittest.Git(t, work, "checkout", "-q", "-b", "roster/dobby/fix")
	head := commitFile(t, work, "fix.txt", "fixed\n")
	if out, ok := push(t, work, "origin", "roster/dobby/fix"); !ok {
		t.Fatalf("push of the worker's branch: %s", out)
	}
	if got := gittest.Git(t, g.bare, "rev-parse", "refs/heads/roster/dobby/fix"); got != head {
		t.Fatalf("the remote has %s, want %s", got, head)
	}
	lines := g.lines()
	last := lines[len(lines)-1]
	if last.Kind != "git" || last.Service != "receive-pack" || last.Decision != "allowed" || len(last.Refs) != 1 ||
		last.Refs[0].Outcome != repos.Pushed || last.Refs[0].New != head {
		t.Fatalf("ledger: %+v", last)
	}
}
