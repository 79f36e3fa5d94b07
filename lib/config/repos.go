package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/roster-sh/roster/lib/errs"
)

// Repo is one [[repo]] grant of a worker spec (docs/repos.md): a git
// repository its boxes reach through the gateway's git route, /git/NAME.
type Repo struct {
	Name   string
	Remote string // https:// URL (http:// to loopback, for tests), or an absolute path to a bare repo on this host
	// Credential are the sources of the remote's token, tried in order
	// (vault:NAME, env:NAME, file:/PATH); remotes only.
	Credential    []string
	Push          []string // ref patterns under refs/heads/ the worker may create or fast-forward
	Protect       []string // never updated directly (a host repo's become gates)
	Force         string   // "own" (the default) or "never"
	CI            bool     // may change CI files (.github/workflows/, .gitlab-ci.yml, ...)
	WakeOnResolve bool     // host repos: a denied or stale approval files a continuation
	MaxPush       int64    // bytes of one push's pack
	MaxBlob       int64    // bytes of one added blob
	MaxFiles      int      // paths one push may add
}

// Host tells a repo on this host (a path) from a remote one (a URL).
func (r Repo) Host() bool { return filepath.IsAbs(r.Remote) }

// Repo defaults (docs/repos.md).
const (
	DefaultRepoMaxPush  = 100 << 20
	DefaultRepoMaxBlob  = 10 << 20
	DefaultRepoMaxFiles = 10000
)

// DefaultProtect are the refs a grant protects when it names none (the
// remote's HEAD branch is added when the gateway learns it).
var DefaultProtect = []string{"main", "master"}

type repoFile struct {
	Name          string   `toml:"name"`
	Remote        string   `toml:"remote"`
	Credential    []string `toml:"credential"`
	Push          []string `toml:"push"`
	Protect       []string `toml:"protect"`
	Force         string   `toml:"force"`
	CI            bool     `toml:"ci"`
	WakeOnResolve bool     `toml:"wake_on_resolve"`
	MaxPush       any      `toml:"max_push"`
	MaxBlob       any      `toml:"max_blob"`
	MaxFiles      *int64   `toml:"max_files"`
}

// KnowledgeRepo is the knowledge repo's route name, /git/knowledge:
// no [[repo]] may take it.
const KnowledgeRepo = "knowledge"

// repoNameRE is a repo grant's name: the /git/NAME of its route.
var repoNameRE = lazyRegexp(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// repos checks each [[repo]]: a usable name given once, a remote that is
// https:// (http:// to loopback) or a bare repo on this host, credential
// sources for remotes only, ref patterns, force, sizes. A grant implies
// the gateway network. What cannot be used is exit 2, naming the line.
func (sp *specParse) repos() error {
	names := map[string]bool{}
	for i, rf := range sp.f.Repo {
		rbad := func(k, msg string) error { return repoSpecError(sp.file, sp.tableLine("repo", i, k), "repo."+k, msg) }
		if !repoNameRE().MatchString(rf.Name) || strings.HasSuffix(rf.Name, ".git") {
			return rbad("name", fmt.Sprintf("%q is not a repo name (a-z or 0-9, then up to 62 of a-z 0-9 . _ -, not ending in .git)", rf.Name))
		}
		if rf.Name == KnowledgeRepo {
			return rbad("name", fmt.Sprintf("%q is the worker's own knowledge repo (/git/knowledge, always there): name this repo otherwise", rf.Name))
		}
		if names[rf.Name] {
			return rbad("name", fmt.Sprintf("%q is given twice", rf.Name))
		}
		names[rf.Name] = true
		if sp.f.Network != "gateway" {
			return rbad("name", fmt.Sprintf("a repo grant needs network = \"gateway\" (this worker's is %q): git goes through the gateway", sp.f.Network))
		}
		r := Repo{Name: rf.Name, Remote: rf.Remote, Force: rf.Force, CI: rf.CI, WakeOnResolve: rf.WakeOnResolve,
			MaxPush: DefaultRepoMaxPush, MaxBlob: DefaultRepoMaxBlob, MaxFiles: DefaultRepoMaxFiles}
		if err := checkRemote(rf.Remote); err != nil {
			return rbad("remote", err.Error())
		}
		if r.Host() {
			r.Remote = filepath.Clean(rf.Remote)
			if len(rf.Credential) > 0 {
				return rbad("credential", "a repo on this host takes no credential (the gateway reads it directly)")
			}
		}
		for _, src := range rf.Credential {
			if err := CheckRepoSource(src); err != nil {
				return rbad("credential", err.Error())
			}
		}
		r.Credential = append([]string(nil), rf.Credential...)
		var err error
		if r.Push, err = refPatterns(rf.Push, []string{"roster/" + sp.name + "/*"}); err != nil {
			return rbad("push", err.Error())
		}
		if r.Protect, err = refPatterns(rf.Protect, DefaultProtect); err != nil {
			return rbad("protect", err.Error())
		}
		switch rf.Force {
		case "":
			r.Force = "own"
		case "own", "never":
		default:
			return rbad("force", fmt.Sprintf("%q must be \"own\" (force only on this worker's own branches) or \"never\"", rf.Force))
		}
		if rf.MaxPush != nil {
			if r.MaxPush, err = sizeValue(rf.MaxPush); err != nil || r.MaxPush < 1 {
				return rbad("max_push", fmt.Sprintf("%v is not a size above 0 (like \"100MiB\")", rf.MaxPush))
			}
		}
		if rf.MaxBlob != nil {
			if r.MaxBlob, err = sizeValue(rf.MaxBlob); err != nil || r.MaxBlob < 1 {
				return rbad("max_blob", fmt.Sprintf("%v is not a size above 0 (like \"10MiB\")", rf.MaxBlob))
			}
		}
		if rf.MaxFiles != nil {
			if *rf.MaxFiles < 1 || *rf.MaxFiles > 1<<31 {
				return rbad("max_files", fmt.Sprintf("%d must be 1 or more", *rf.MaxFiles))
			}
			r.MaxFiles = int(*rf.MaxFiles)
		}
		sp.w.Repos = append(sp.w.Repos, r)
	}
	return nil
}

func repoSpecError(file string, line int, key, msg string) error {
	where := file
	if line > 0 {
		where = fmt.Sprintf("%s:%d", file, line)
	}
	return errs.WithHint(errs.New(errs.ErrUsage, where+": "+key+": "+msg),
		"fix the file (roster(7) and docs/repos.md describe [[repo]]); nothing was changed")
}

// checkRemote accepts an https:// URL with a host and a path (no user,
// query or fragment: a token in the URL would reach git's argv), an
// http:// one only to loopback (tests), or an absolute path to a bare git
// repo on this host.
func checkRemote(s string) error {
	if filepath.IsAbs(s) {
		return checkBareRepo(filepath.Clean(s))
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return fmt.Errorf("%q must be an https:// URL or an absolute path to a bare repo on this host", s)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return fmt.Errorf("%q: no user, token, query or fragment in the URL (the token goes in credential)", s)
	}
	if strings.Trim(u.Path, "/") == "" {
		return fmt.Errorf("%q names no repository (want https://HOST/OWNER/NAME.git)", s)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if ip := net.ParseIP(u.Hostname()); (ip != nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
			return nil
		}
		return fmt.Errorf("%q: http:// only to loopback (for tests); a forge is https://", s)
	}
	return fmt.Errorf("%q: scheme %q: want https:// (ssh, git:// and file:// are not served)", s, u.Scheme)
}

// checkBareRepo tells a bare git repository by its layout: HEAD, objects/
// and refs/ directly in it, no work tree.
func checkBareRepo(dir string) error {
	for _, p := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return fmt.Errorf("%s is not a bare git repository (no %s; make one with `git init --bare %s` or `git clone --bare`)", dir, p, dir)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		return fmt.Errorf("%s holds a work tree (.git): grant its bare repository instead (`git clone --bare`)", dir)
	}
	return nil
}

// CheckRepoSource validates a repo credential source: vault:NAME (the
// vault's file NAME), env:NAME or file:/ABSOLUTE/PATH.
func CheckRepoSource(src string) error {
	switch {
	case strings.HasPrefix(src, "vault:") && providerNameRE().MatchString(strings.TrimPrefix(src, "vault:")):
		return nil
	case strings.HasPrefix(src, "env:") && envNameRE().MatchString(strings.TrimPrefix(src, "env:")):
		return nil
	case strings.HasPrefix(src, "file:") && filepath.IsAbs(strings.TrimPrefix(src, "file:")):
		return nil
	}
	return fmt.Errorf("credential source %q: want vault:NAME, env:NAME or file:/ABSOLUTE/PATH", src)
}

// refPatterns checks a list of branch patterns (a name under refs/heads/,
// * matching within one path part at most once per part); none given is
// def.
func refPatterns(given, def []string) ([]string, error) {
	if given == nil {
		return append([]string(nil), def...), nil
	}
	out := make([]string, 0, len(given))
	for _, p := range given {
		p = strings.TrimPrefix(p, "refs/heads/")
		if err := ValidRefPattern(p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// ValidRefPattern checks a branch name or pattern as git's
// check-ref-format would a branch (with * allowed).
func ValidRefPattern(p string) error {
	bad := func(why string) error { return fmt.Errorf("%q is not a branch pattern: %s", p, why) }
	switch {
	case p == "":
		return bad("empty")
	case strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Contains(p, "//"):
		return bad("an empty path part")
	case strings.Contains(p, ".."), strings.Contains(p, "@{"), strings.HasSuffix(p, ".lock"), strings.HasSuffix(p, "."):
		return bad(`no "..", "@{", trailing "." or ".lock"`)
	case p == "@" || strings.HasPrefix(p, "-"):
		return bad(`not "@" and no leading "-"`)
	}
	for _, c := range p {
		if c < 0x20 || c == 0x7f || strings.ContainsRune(" ~^:?[\\", c) {
			return bad(fmt.Sprintf("%q is not allowed in a ref", c))
		}
	}
	for _, part := range strings.Split(p, "/") {
		if strings.HasPrefix(part, ".") {
			return bad("a path part starts with \".\"")
		}
	}
	return nil
}
