package gittest

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Server is a git remote serving the bare repos under Root.
type Server struct {
	Root string
	URL  string // http://127.0.0.1:PORT

	mu    sync.Mutex
	token string
	auths int // requests that carried the right token
}

// New starts a server whose repos need token ("" = none needed).
func New(t testing.TB, token string) *Server {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	s := &Server{Root: t.TempDir(), token: token}
	backend := &cgi.Handler{
		Path: gitBin,
		Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + s.Root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + s.Root},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="gittest"`)
			http.Error(w, "bad credentials", http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.TransferEncoding = nil
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func (s *Server) authorized(r *http.Request) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token == "" {
		return true
	}
	h := r.Header.Get("Authorization")
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(h, "Basic "))
	if !strings.HasPrefix(h, "Basic ") || err != nil {
		return false
	}
	_, pass, _ := strings.Cut(string(raw), ":")
	if pass != s.token {
		return false
	}
	s.auths++
	return true
}

// SetToken changes the token the server takes.
func (s *Server) SetToken(tok string) {
	s.mu.Lock()
	s.token = tok
	s.mu.Unlock()
}

// Bare makes the bare repo NAME.git with one commit on main (README) and
// returns its path; its URL is s.URL + "/NAME.git".
func (s *Server) Bare(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(s.Root, name+".git")
	NewBare(t, dir)
	Git(t, dir, "config", "http.receivepack", "true")
	return dir
}

// NewBare makes a bare repo at dir with one commit on main (README).
func NewBare(t testing.TB, dir string) {
	t.Helper()
	Git(t, "", "init", "-q", "--bare", "-b", "main", dir)
	work := t.TempDir()
	Git(t, "", "init", "-q", "-b", "main", work)
	os.WriteFile(filepath.Join(work, "README"), []byte("hello\n"), 0o644)
	Git(t, work, "add", "README")
	Git(t, work, "commit", "-q", "-m", "first")
	Git(t, work, "push", "-q", dir, "main")
}

// Git runs the test's own git (not roster's hardened one) in dir with a
// home of its own, failing the test on error; it returns stdout.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := Cmd(dir, args...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("git %v in %s: %v: %s", args, dir, err, stderr)
	}
	return strings.TrimSpace(string(out))
}

// Cmd is the test's git in dir, as a client would run it.
func Cmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if dir == "" {
		cmd.Dir = os.TempDir()
	}
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid",
		"GIT_ALLOW_PROTOCOL=file:http:https")
	return cmd
}

// Objects lists every object in bare repo dir (to show a refusal left
// none behind).
func Objects(t testing.TB, dir string) string {
	t.Helper()
	return Git(t, dir, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
}
