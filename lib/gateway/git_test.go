package gateway

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/repos"
	"github.com/roster-sh/roster/lib/repos/gittest"
	"github.com/roster-sh/roster/lib/runs"
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

// mirror is the gateway's copy of the remote.
func (g *gitRig) mirror() string { return filepath.Join(g.svc.Dir, "app.git") }

// refusedPush pushes args from work, expects git to fail printing want,
// and the remote and the mirror to be unchanged (no ref moved, no object
// taken in).
func (g *gitRig) refusedPush(t *testing.T, work, want string, args ...string) {
	t.Helper()
	remoteRefs, remoteObjs := gittest.Git(t, g.bare, "for-each-ref"), gittest.Objects(t, g.bare)
	mirrorObjs := gittest.Objects(t, g.mirror())
	out, ok := push(t, work, args...)
	if ok || !strings.Contains(out, want) {
		t.Fatalf("push %v: ok=%v, want a refusal printing %q:\n%s", args, ok, want, out)
	}
	if got := gittest.Git(t, g.bare, "for-each-ref"); got != remoteRefs {
		t.Fatalf("the remote's refs moved:\n%s\nwas\n%s", got, remoteRefs)
	}
	if got := gittest.Objects(t, g.bare); got != remoteObjs {
		t.Fatal("the remote took in objects")
	}
	if got := gittest.Objects(t, g.mirror()); got != mirrorObjs {
		t.Fatalf("the mirror kept objects of a refused push:\n%s\nwas\n%s", got, mirrorObjs)
	}
}

func TestGitRefRules(t *testing.T) {
	g := newGitRig(t, nil)
	work := g.clone(t)
	commitFile(t, work, "a.txt", "a\n")
	g.refusedPush(t, work, "roster: ref_protected: main is protected", "origin", "HEAD:main")
	g.refusedPush(t, work, "roster: ref_not_granted", "origin", "HEAD:feature")
	g.refusedPush(t, work, "roster: ref_not_granted", "origin", "HEAD:roster/kreacher/x")
	gittest.Git(t, work, "tag", "v1")
	g.refusedPush(t, work, "roster: ref_kind", "origin", "v1")
	g.refusedPush(t, work, "roster: ref_kind", "origin", "HEAD:refs/notes/commits")
	// All or nothing: an allowed ref beside a refused one lands neither.
	g.refusedPush(t, work, "roster: atomic", "origin", "HEAD:roster/dobby/ok", "HEAD:main")

	// Force: only on a branch this worker created through roster.
	if out, ok := push(t, work, "origin", "HEAD:roster/dobby/mine"); !ok {
		t.Fatal(out)
	}
	gittest.Git(t, work, "commit", "-q", "--amend", "-m", "rewritten")
	if out, ok := push(t, work, "--force", "origin", "HEAD:roster/dobby/mine"); !ok {
		t.Fatalf("force on the worker's own branch: %s", out)
	}
	// A branch of the same pattern someone else made (on the remote).
	gittest.Git(t, g.bare, "branch", "roster/dobby/theirs", "main")
	orphan := gittest.Git(t, work, "commit-tree", "HEAD^{tree}", "-m", "orphan")
	g.refusedPush(t, work, "roster: force_refused", "--force", "origin", orphan+":refs/heads/roster/dobby/theirs")
	// Deletes: its own branch yes, another's no.
	g.refusedPush(t, work, "roster: delete_refused", "origin", ":roster/dobby/theirs")
	if out, ok := push(t, work, "origin", ":roster/dobby/mine"); !ok {
		t.Fatalf("delete of its own branch: %s", out)
	}
	if out, _ := gittest.Cmd(g.bare, "rev-parse", "--verify", "-q", "refs/heads/roster/dobby/mine").Output(); len(out) != 0 {
		t.Fatal("the delete did not reach the remote")
	}
	var atomic *runs.LedgerEntry
	for _, e := range g.lines() {
		if len(e.Refs) == 2 {
			atomic = &e
		}
	}
	kinds := map[string]string{}
	if atomic != nil {
		for _, r := range atomic.Refs {
			if r.Outcome == repos.Refused {
				kinds[r.Ref] = r.Refusal
			}
		}
	}
	if atomic == nil || atomic.Decision != "refused" || atomic.Refusal != repos.RefuseRefProtected ||
		kinds["refs/heads/main"] != repos.RefuseRefProtected || kinds["refs/heads/roster/dobby/ok"] != repos.RefuseAtomic {
		t.Fatalf("ledger of the all-or-nothing push: %+v", atomic)
	}
}

func TestGitContentRules(t *testing.T) {
	g := newGitRig(t, func(r *config.Repo) { r.MaxBlob = 1 << 20 })
	for _, c := range []struct {
		name, want string
		make       func(work string)
	}{
		{"secret", "roster: secret: leak.txt holds a credential (the one repo app (env:GITHUB_TOKEN) gives)", func(w string) {
			commitFile(t, w, "leak.txt", "token = "+gitToken+"\n")
		}},
		{"gitmodules", "roster: gitmodules", func(w string) {
			commitFile(t, w, ".gitmodules", "[submodule \"x\"]\n\tpath = x\n\turl = https://example.invalid/x\n")
		}},
		{"gitlink", "roster: gitlink", func(w string) {
			gittest.Git(t, w, "update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("1", 40)+",sub")
			gittest.Git(t, w, "commit", "-q", "-m", "gitlink")
		}},
		{"symlink", "roster: symlink_escape", func(w string) {
			os.Symlink("../../etc/passwd", filepath.Join(w, "link"))
			gittest.Git(t, w, "add", "link")
			gittest.Git(t, w, "commit", "-q", "-m", "link")
		}},
		{"ci", "roster: ci_file: .github/workflows/x.yml", func(w string) {
			commitFile(t, w, ".github/workflows/x.yml", "on: push\n")
		}},
		{"blob", "roster: blob_too_large: big.bin", func(w string) {
			commitFile(t, w, "big.bin", strings.Repeat("x", 2<<20))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			work := g.clone(t)
			gittest.Git(t, work, "checkout", "-q", "-b", "roster/dobby/"+c.name)
			c.make(work)
			g.refusedPush(t, work, c.want, "origin", "roster/dobby/"+c.name)
			if c.name == "secret" {
				data, _ := os.ReadFile(g.ledger)
				if strings.Contains(string(data), gitToken) {
					t.Fatal("the ledger holds the token")
				}
			}
		})
	}
	// An inside symlink and a CI file with ci = true are fine.
	work := g.clone(t)
	gittest.Git(t, work, "checkout", "-q", "-b", "roster/dobby/ok")
	os.Symlink("README", filepath.Join(work, "readme-link"))
	commitFile(t, work, "docs/x.txt", "x\n")
	if out, ok := push(t, work, "origin", "roster/dobby/ok"); !ok {
		t.Fatalf("an inside symlink: %s", out)
	}
}

// TestGitBigPushAndFetch: a push of a few MiB (git sends it chunked) and
// a fetch of it back (gzip-compressed negotiation) through the gateway.
func TestGitBigPushAndFetch(t *testing.T) {
	g := newGitRig(t, nil)
	work := g.clone(t)
	gittest.Git(t, work, "checkout", "-q", "-b", "roster/dobby/big")
	var b strings.Builder
	for i := 0; b.Len() < 3<<20; i++ {
		b.WriteString(strings.Repeat(string(rune('a'+i%26)), 61) + "\n")
		if i%7 == 0 {
			b.WriteString(gitToken[:i%20] + "\n") // noise, never the whole token
		}
	}
	commitFile(t, work, "big.txt", b.String()+randomText(t, 2<<20))
	head := gittest.Git(t, work, "rev-parse", "HEAD")
	if out, ok := push(t, work, "origin", "roster/dobby/big"); !ok {
		t.Fatalf("a 3 MiB push: %s", out)
	}
	if got := gittest.Git(t, g.bare, "rev-parse", "roster/dobby/big"); got != head {
		t.Fatal("the big push did not land")
	}
	other := filepath.Join(t.TempDir(), "o")
	gittest.Git(t, "", "clone", "-q", "-b", "roster/dobby/big", g.url, other)
	if got := gittest.Git(t, other, "rev-parse", "HEAD"); got != head {
		t.Fatal("the clone of the big branch differs")
	}
	// Protocol v0 too.
	v0 := filepath.Join(t.TempDir(), "v0")
	gittest.Git(t, "", "-c", "protocol.version=0", "clone", "-q", g.url, v0)
}

func randomText(t *testing.T, n int) string {
	f, err := os.Open("/dev/urandom")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, n/2)
	io.ReadFull(f, buf)
	return hex.EncodeToString(buf)
}

// TestGitUpstreamRejects: the upstream's own verdict decides; a refusal
// there leaves the box's push failed with the upstream's words.
func TestGitUpstreamRejects(t *testing.T) {
	g := newGitRig(t, nil)
	work := g.clone(t)
	hook := filepath.Join(g.bare, "hooks", "pre-receive")
	os.WriteFile(hook, []byte("#!/bin/sh\necho 'upstream says: no pushes today' >&2\nexit 1\n"), 0o755)
	commitFile(t, work, "b.txt", "b\n")
	g.refusedPush(t, work, "upstream_rejected", "origin", "HEAD:roster/dobby/up")
	out, _ := push(t, work, "origin", "HEAD:roster/dobby/up")
	if !strings.Contains(out, "no pushes today") {
		t.Fatalf("the upstream's words are not passed on:\n%s", out)
	}
	os.Remove(hook)
	// A wrong token: the advertisement's refresh fails (the box sees 502).
	g.remote.SetToken("another-token")
	out, ok := push(t, work, "origin", "HEAD:roster/dobby/up")
	if ok || !strings.Contains(out, "roster: upstream_rejected") || strings.Contains(out, gitToken) {
		t.Fatalf("wrong token: ok=%v\n%s", ok, out)
	}
	data, _ := os.ReadFile(g.ledger)
	if strings.Contains(string(data), gitToken) {
		t.Fatal("the ledger holds the token")
	}
}

func TestGitRouteRefusals(t *testing.T) {
	g := newGitRig(t, nil)
	base := strings.TrimSuffix(g.url, "/app")
	for _, c := range []struct{ method, path, kind string }{
		{"GET", "/other/info/refs?service=git-upload-pack", repos.RefuseRepoNotGranted},
		{"GET", "/app/info/refs?service=git-upload-archive", "bad_request"},
		{"GET", "/app/HEAD", "bad_request"},
		{"GET", "/app/git-upload-pack", "bad_request"},
		{"POST", "/app/git-receive-pack", "bad_request"}, // an empty body
	} {
		req, _ := http.NewRequest(c.method, base+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.Header.Get("X-Roster-Refusal") != c.kind || !strings.Contains(string(body), "roster: "+c.kind) {
			t.Errorf("%s %s: %d %q %s", c.method, c.path, resp.StatusCode, resp.Header.Get("X-Roster-Refusal"), body)
		}
	}
	// Garbage and truncated pkt-lines leave the gateway serving and the
	// mirror unchanged.
	g.clone(t)
	objs := gittest.Objects(t, g.mirror())
	for _, body := range []string{"garbage", "00", "0032" + strings.Repeat("0", 40), "ffff" + strings.Repeat("x", 100)} {
		resp, err := http.Post(base+"/app/git-receive-pack", "application/x-git-receive-pack-request", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%q: %d", body, resp.StatusCode)
		}
	}
	// git's probe before a chunked push: a flush alone, answered with nothing.
	resp, err := http.Post(base+"/app/git-receive-pack", "application/x-git-receive-pack-request", strings.NewReader("0000"))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the probe: %v %v", resp, err)
	}
	resp.Body.Close()
	if gittest.Objects(t, g.mirror()) != objs {
		t.Fatal("garbage changed the mirror")
	}
	g.clone(t) // still serving
}

// TestGitUpstreamHeadIsProtected: the branch the remote's HEAD names is
// protected beside the grant's list, whatever it is called.
func TestGitUpstreamHeadIsProtected(t *testing.T) {
	g := newGitRig(t, func(r *config.Repo) { r.Push = []string{"*"} })
	gittest.Git(t, g.bare, "branch", "trunk", "main")
	gittest.Git(t, g.bare, "symbolic-ref", "HEAD", "refs/heads/trunk")
	work := g.clone(t)
	commitFile(t, work, "t.txt", "t\n")
	g.refusedPush(t, work, "roster: ref_protected: trunk is protected", "origin", "HEAD:trunk")
	if out, ok := push(t, work, "origin", "HEAD:feature"); !ok {
		t.Fatalf("push = [\"*\"] lets any other branch through: %s", out)
	}
}

// TestGitPushOverMaxPush: git's own receive.maxInputSize stops the pack;
// the client is told push_too_large and nothing is kept.
func TestGitPushOverMaxPush(t *testing.T) {
	g := newGitRig(t, func(r *config.Repo) { r.MaxPush = 256 << 10 })
	work := g.clone(t)
	gittest.Git(t, work, "checkout", "-q", "-b", "roster/dobby/huge")
	commitFile(t, work, "huge.txt", randomText(t, 1<<20))
	g.refusedPush(t, work, "push_too_large", "origin", "roster/dobby/huge")
}

// TestGitCIAllowedAndMaxFiles: ci = true lets a CI file through;
// max_files counts the files a push adds.
func TestGitCIAllowedAndMaxFiles(t *testing.T) {
	g := newGitRig(t, func(r *config.Repo) { r.CI, r.MaxFiles = true, 3 })
	work := g.clone(t)
	gittest.Git(t, work, "checkout", "-q", "-b", "roster/dobby/ci")
	commitFile(t, work, ".github/workflows/x.yml", "on: push\n")
	if out, ok := push(t, work, "origin", "roster/dobby/ci"); !ok {
		t.Fatalf("a CI file with ci = true: %s", out)
	}
	for i := 0; i < 4; i++ {
		commitFile(t, work, fmt.Sprintf("f%d.txt", i), fmt.Sprintf("file %d\n", i))
	}
	g.refusedPush(t, work, "roster: too_many_files", "origin", "roster/dobby/ci")
}

// TestGitGzipV2Request: a protocol v2 request with a gzip body (git sends
// one when its negotiation is large) is decompressed and served.
func TestGitGzipV2Request(t *testing.T) {
	g := newGitRig(t, nil)
	get, _ := http.NewRequest("GET", g.url+"/info/refs?service=git-upload-pack", nil)
	get.Header.Set("Git-Protocol", "version=2")
	resp, err := http.DefaultClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	adv, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(adv), "version 2") || !strings.Contains(string(adv), "ls-refs") {
		t.Fatalf("v2 advertisement: %q", adv)
	}
	var body bytes.Buffer
	zw := gzip.NewWriter(&body)
	zw.Write(repos.Pkt("command=ls-refs\n"))
	zw.Write([]byte("0001"))
	zw.Write(repos.Flush)
	zw.Close()
	post, _ := http.NewRequest("POST", g.url+"/git-upload-pack", &body)
	post.Header.Set("Git-Protocol", "version=2")
	post.Header.Set("Content-Encoding", "gzip")
	post.Header.Set("Content-Type", "application/x-git-upload-pack-request")
	resp, err = http.DefaultClient.Do(post)
	if err != nil {
		t.Fatal(err)
	}
	refs, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(refs), "refs/heads/main") {
		t.Fatalf("ls-refs over gzip: %d %q", resp.StatusCode, refs)
	}
}

// A host repo's push that holds a protected ref for review opens its gate
// from the hook, before any ref moves: a gate that cannot be opened
// refuses the whole push (the worker's own branch in it too, nothing in
// the repo moved), and one that opens lands the rest and parks main's
// commits in a pending ref.
func TestGitGateThatCannotOpenRefusesTheWholePush(t *testing.T) {
	host := filepath.Join(t.TempDir(), "app.git")
	gittest.NewBare(t, host)
	g := newGitRig(t, func(r *config.Repo) { r.Remote, r.Credential = host, nil })
	var opened []repos.GateRequest
	fail := true
	g.svc.Gate = func(ctx context.Context, req repos.GateRequest) (string, error) {
		if fail {
			return "", errors.New("the task's partition is unreadable")
		}
		opened = append(opened, req)
		return "g1", nil
	}
	work := g.clone(t)
	head := commitFile(t, work, "fix.txt", "fixed\n")
	before := gittest.Git(t, host, "for-each-ref")
	out, ok := push(t, work, "origin", "HEAD:roster/dobby/fix", "HEAD:main")
	if ok || !strings.Contains(out, "gate_failed") || !strings.Contains(out, "the task's partition is unreadable") {
		t.Fatalf("push with a gate that cannot open: ok=%v\n%s", ok, out)
	}
	if got := gittest.Git(t, host, "for-each-ref"); got != before {
		t.Fatalf("refs moved although the push was refused:\n%s\nwas\n%s", got, before)
	}
	fail = false
	out, ok = push(t, work, "origin", "HEAD:roster/dobby/fix", "HEAD:main")
	if !ok || !strings.Contains(out, "waits for review (gate g1)") {
		t.Fatalf("push with a gate: ok=%v\n%s", ok, out)
	}
	if gittest.Git(t, host, "rev-parse", "roster/dobby/fix") != head || len(opened) != 1 ||
		!strings.Contains(opened[0].What, "1 commits, 1 file changed") ||
		gittest.Git(t, host, "rev-parse", opened[0].Pending) != head {
		t.Fatalf("after the gated push: gates %+v, refs\n%s", opened, gittest.Git(t, host, "for-each-ref"))
	}
	if gittest.Git(t, host, "rev-parse", "main") == head {
		t.Fatal("main moved before review")
	}
	// a gate whose commits never landed (opened before a later gate of its
	// push failed) is not approved: it says so, and nothing moves
	stray := repos.GateRequest{Ref: "refs/heads/main", New: strings.Repeat("ab", 20), Pending: repos.PendingPrefix + "stray"}
	err := g.svc.Git.Land(context.Background(), host, filepath.Join(t.TempDir(), "lock"), stray)
	if !errors.Is(err, errs.ErrConflict) || !strings.Contains(err.Error(), "deny this gate") {
		t.Fatalf("landing a gate without its commits: %v", err)
	}
}
