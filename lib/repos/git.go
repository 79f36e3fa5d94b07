package repos

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
)

// MinGit is the oldest git roster drives: safe.bareRepository (2.38) is
// among the hardening flags.
const MinGit = "2.38"

// Git runs the host's git, hardened.
type Git struct {
	Bin      string // the git program ("" = git on PATH)
	Home     string // an empty folder of roster's, git's HOME
	HooksDir string // roster's own hooks ("" = an empty path: none)
}

// ErrNoGit is git missing or too old on the host.
var ErrNoGit = errors.New("git")

var versionOnce = sync.OnceValues(func() (string, error) { return gitVersion(VersionCache) })

// gitVersion is `git version`'s line, from cache (a file, "": none) when
// it names the git on PATH as it is now.
func gitVersion(cache string) (string, error) {
	bin, err := exec.LookPath("git")
	if err != nil {
		return "", err
	}
	id, ok := fsx.StatID(bin)
	cached := ok && !id.Racy && cache != ""
	if cached {
		if b, err := os.ReadFile(cache); err == nil {
			if key, v, ok := strings.Cut(strings.TrimSpace(string(b)), "\n"); ok && key == bin+" "+id.String() {
				return v, nil
			}
		}
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(out))
	if cached && !strings.Contains(v, "\n") {
		_ = fsx.WriteFile(cache, []byte(bin+" "+id.String()+"\n"+v+"\n"), 0o644) // a cache: its failure costs one `git version` next time
	}
	return v, nil
}

// VersionCache, if set, is a file where Find keeps `git version`'s line
// with the path and identity (device, inode, size, times) of the git it
// came from: a program started for every run (roster-box) then runs `git
// version` only when the host's git changed. A git replaced in place, or
// within a second of its change, is asked again.
var VersionCache string

// Find returns the host's git if it is MinGit or newer; otherwise an error
// saying what is needed (exit 14).
func Find() (string, error) {
	bin, err := exec.LookPath("git")
	if err != nil {
		return "", errs.WithHint(errs.New(errs.ErrRefused, fmt.Sprintf("a [[repo]] grant needs git %s or newer on the host, and none was found on PATH: %v", MinGit, ErrNoGit)),
			"install it (Debian: apt-get install git)")
	}
	v, err := versionOnce()
	if err != nil {
		return "", errs.New(errs.ErrRefused, fmt.Sprintf("%s version: %v", bin, err))
	}
	if !AtLeast(v, MinGit) {
		return "", errs.WithHint(errs.New(errs.ErrRefused, fmt.Sprintf("%s is %q: a [[repo]] grant needs git %s or newer: %v", bin, v, MinGit, ErrNoGit)),
			"upgrade git on the host")
	}
	return bin, nil
}

// AtLeast tells whether `git version`'s line v names min or newer.
func AtLeast(v, min string) bool {
	f := strings.Fields(v)
	if len(f) < 3 {
		return false
	}
	have, want := nums(f[2]), nums(min)
	for i := range want {
		if i >= len(have) || have[i] < want[i] {
			return false
		}
		if have[i] > want[i] {
			return true
		}
	}
	return true
}

func nums(s string) []int {
	var out []int
	for _, p := range strings.Split(s, ".") {
		n, err := strconv.Atoi(p)
		if err != nil {
			break
		}
		out = append(out, n)
	}
	return out
}

// Hardened are the -c settings every git gets (docs/repos.md).
func (g *Git) hardened() []string {
	hooks := g.HooksDir
	if hooks == "" {
		hooks = "/nonexistent/roster-no-hooks"
	}
	return []string{
		"-c", "core.hooksPath=" + hooks,
		"-c", "core.fsmonitor=false",
		"-c", "safe.bareRepository=explicit",
		"-c", "receive.fsckObjects=true",
		"-c", "transfer.fsckObjects=true",
		"-c", "fetch.fsckObjects=true",
		"-c", "protocol.allow=never",
		"-c", "protocol.file.allow=never",
		"-c", "uploadpack.allowFilter=true",
		"-c", "submodule.recurse=false",
		"-c", "fetch.recurseSubmodules=false",
		"-c", "core.askPass=",
		"-c", "credential.helper=",
	}
}

// Cmd is `git --git-dir=DIR <hardened> EXTRA... ARGS...` with an
// environment of its own: env are more NAME=VALUE entries (GIT_PROTOCOL,
// the quarantine's, a credential's GIT_CONFIG_*).
func (g *Git) Cmd(ctx context.Context, dir string, extra []string, env []string, args ...string) *exec.Cmd {
	bin := g.Bin
	if bin == "" {
		bin = "git"
	}
	a := append([]string{"--git-dir=" + dir}, g.hardened()...)
	a = append(append(a, extra...), args...)
	cmd := exec.CommandContext(ctx, bin, a...)
	home := g.Home
	if home == "" {
		home = "/nonexistent/roster-git-home"
	}
	cmd.Env = append([]string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=/bin/false",
		"GIT_NO_REPLACE_OBJECTS=1",
		"LC_ALL=C",
	}, env...)
	cmd.Dir = "/"
	return cmd
}

// Run runs a Cmd and returns its stdout; a failure carries its stderr.
func (g *Git) Run(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	cmd := g.Cmd(ctx, dir, nil, env, args...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(clip(stderr.String(), 600)))
	}
	return out.Bytes(), nil
}

// CredentialEnv is the environment that makes git send token to remote's
// host as HTTP Basic x-access-token:TOKEN (what GitHub and GitLab take
// for an installation or personal token), scoped to that URL, through
// git's environment-only config (never argv, never a file).
func CredentialEnv(remote, token string) []string {
	if token == "" {
		return nil
	}
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
	return []string{
		"GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=http." + remote + ".extraHeader",
		"GIT_CONFIG_VALUE_0=Authorization: Basic " + basic,
	}
}

// transportEnv allows the one transport a mirror's refresh uses.
func transportEnv(remote string) []string {
	scheme := "https"
	if strings.HasPrefix(remote, "http://") {
		scheme = "http"
	}
	return []string{"GIT_ALLOW_PROTOCOL=" + scheme}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// MkdirEmpty makes dir (0700) if it is missing: git's HOME.
func MkdirEmpty(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return nil
}
