// Command gitbench measures the gateway's git route against the same git
// served directly, side by side in one run (bench/git.sh): a clone of a
// ~50 MB repo through the gateway (the mirror's refresh from the
// upstream, then upload-pack from the mirror) against `git clone` from
// the test remote itself, and a push of a ~10 MB change (the judge's ref
// and content rules, the secret scan, the upstream push with leases)
// against a push straight to the remote (a copy of its own, so neither
// side's pushes are fetched by the other's). The remote is `git http-backend`
// on 127.0.0.1; everything is loopback. It prints medians and ratios,
// never a verdict.
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/gateway"
	"github.com/roster-sh/roster/lib/repos"
)

func main() {
	if os.Getenv(repos.JudgeFDEnv) != "" && len(os.Args) > 1 && os.Args[len(os.Args)-1] == "pre-receive" {
		os.Exit(repos.HookMain(os.Stdin, os.Stderr)) // the gateway's pre-receive hook, as roster-box git-hook is
	}
	size := flag.Int("mb", 50, "size of the repo to clone, MB (incompressible)")
	pushMB := flag.Int("push-mb", 10, "size of the change to push, MB")
	rounds := flag.Int("rounds", 3, "rounds, each side once per round")
	flag.Parse()
	dir, _ := os.MkdirTemp("", "gitbench-")
	defer os.RemoveAll(dir)
	const token = "ghp_gitbenchToken0123456789abcdefghij"

	root := filepath.Join(dir, "remote")
	bare := filepath.Join(root, "app.git")
	must(os.MkdirAll(root, 0o755))
	seed(dir, bare, *size)
	// The direct side has a copy of its own, the same content: pushed to
	// the one remote, its 10 MB changes would be fetched into the mirror
	// by the gateway side's next refresh, timed as the gateway's.
	git("", "clone", "-q", "--bare", bare, filepath.Join(root, "direct.git"))
	git(filepath.Join(root, "direct.git"), "config", "http.receivepack", "true")
	remote := serveRemote(root, token)
	svc := &repos.Service{Git: &repos.Git{}, Worker: "bench", Dir: filepath.Join(dir, "repos"),
		Repos: []config.Repo{{Name: "app", Remote: remote + "/app.git", Credential: []string{"env:T"},
			Push: []string{"roster/bench/*"}, Protect: config.DefaultProtect, Force: "own",
			MaxPush: config.DefaultRepoMaxPush, MaxBlob: 64 << 20, MaxFiles: config.DefaultRepoMaxFiles}},
		Token:    func(config.Repo) (string, error) { return token, nil },
		Secrets:  func() []repos.Secret { return []repos.Secret{{Source: "bench", Value: token}} },
		HookArgv: []string{os.Args[0]}}
	g, err := gateway.New(gateway.Config{Worker: "bench", Run: "r", Git: svc})
	must(err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	go g.Serve(l)
	viaGateway := "http://" + l.Addr().String() + "/git/app"
	direct := "http://x-access-token:" + token + "@" + strings.TrimPrefix(remote, "http://") + "/direct.git"

	var cd, cg, pd, pg []float64
	for i := 0; i < *rounds; i++ {
		cd = append(cd, timed(func() { clone(dir, direct, "cd"+strconv.Itoa(i)) }))
		cg = append(cg, timed(func() { clone(dir, viaGateway, "cg"+strconv.Itoa(i)) }))
		work := filepath.Join(dir, "cd"+strconv.Itoa(i))
		change(work, *pushMB, i)
		pd = append(pd, timed(func() { git(work, "push", "-q", direct, "HEAD:refs/heads/roster/bench/d"+strconv.Itoa(i)) }))
		workG := filepath.Join(dir, "cg"+strconv.Itoa(i))
		change(workG, *pushMB, i+100)
		pg = append(pg, timed(func() { git(workG, "push", "-q", "origin", "HEAD:refs/heads/roster/bench/g"+strconv.Itoa(i)) }))
		os.RemoveAll(work)
		os.RemoveAll(workG)
	}
	fmt.Printf("%-34s %10s %10s %8s\n", "", "direct s", "gateway s", "ratio")
	row := func(name string, d, gw []float64, goal string) {
		md, mg := median(d), median(gw)
		fmt.Printf("%-34s %10.2f %10.2f %7.2fx  (goal %s)\n", name, md, mg, mg/md, goal)
	}
	row(fmt.Sprintf("clone of a %d MB repo", *size), cd, cg, "<= 1.5x")
	row(fmt.Sprintf("push of a %d MB change", *pushMB), pd, pg, "<= 2x, with validation and forwarding")
	g.Close()
}

// seed makes bare with one commit of n MB of incompressible files.
func seed(dir, bare string, n int) {
	work := filepath.Join(dir, "seed")
	git("", "init", "-q", "-b", "main", work)
	for i := 0; i < n; i++ {
		write(filepath.Join(work, "data", fmt.Sprintf("f%03d.bin", i)), 1<<20)
	}
	git(work, "add", "-A")
	git(work, "commit", "-q", "-m", "seed")
	git("", "init", "-q", "--bare", "-b", "main", bare)
	git(bare, "config", "http.receivepack", "true")
	git(work, "push", "-q", bare, "main")
}

func change(work string, mb, k int) {
	for i := 0; i < mb; i++ {
		write(filepath.Join(work, "new", fmt.Sprintf("c%d-%03d.txt", k, i)), 1<<20)
	}
	git(work, "add", "-A")
	git(work, "commit", "-q", "-m", "change")
}

func write(p string, n int) {
	must(os.MkdirAll(filepath.Dir(p), 0o755))
	b := make([]byte, n/2)
	rand.Read(b)
	must(os.WriteFile(p, []byte(hex.EncodeToString(b)), 0o644))
}

func clone(dir, url, name string) { git("", "clone", "-q", url, filepath.Join(dir, name)) }

func serveRemote(root, token string) string {
	bin, err := exec.LookPath("git")
	must(err)
	backend := &cgi.Handler{Path: bin, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + root}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pass, _ := r.BasicAuth(); pass != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="bench"`)
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body) // net/http/cgi refuses chunked bodies
		r.Body, r.ContentLength, r.TransferEncoding = io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		backend.ServeHTTP(w, r)
	}))
	return "http://" + l.Addr().String()
}

func git(dir string, args ...string) {
	cmd := exec.Command("git", args...)
	if dir != "" {
		cmd.Dir = dir
	}
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@x.invalid", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@x.invalid")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "gitbench: git %v: %v\n%s", args, err, out)
		os.Exit(1)
	}
}

func timed(f func()) float64 {
	t := time.Now()
	f()
	return time.Since(t).Seconds()
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "gitbench:", err)
		os.Exit(1)
	}
}
