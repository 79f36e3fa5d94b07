package repos

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/fsx"
)

// Service is one run's git: the worker's [[repo]] grants, served from
// the host's own bare repos.
type Service struct {
	Git    *Git
	Worker string
	// Dir is data/workers/W/repos: the mirrors (NAME.git) and what roster
	// keeps about them (NAME.own: the branches this worker created).
	Dir   string
	Repos []config.Repo
	// Token looks a remote's credential up, fresh at each use ("" and nil:
	// none configured); it is never logged or written.
	Token func(r config.Repo) (string, error)
	// Secrets are every credential the gateway can resolve for the worker,
	// for the content rules' exact-match scan (nil: none).
	Secrets func() []Secret
	// Run names the run (its pending refs carry it).
	Run string
	// Gate opens a repo_push gate on the run's task for a push to a host
	// repo's protected ref and returns its id; nil (an ad-hoc run, no
	// task): such a push is refused.
	Gate func(ctx context.Context, g GateRequest) (string, error)
	// Journal is told each push's refs and their outcomes (the task
	// journal's line); nil: not journaled.
	Journal func(ctx context.Context, refs []RefResult)
	// HookArgv starts roster's pre-receive hook (HookMain): the supervisor
	// runs itself as `roster-box git-hook`.
	HookArgv []string
	// Knowledge is the run's access to the worker's knowledge repo,
	// /git/knowledge (nil: none).
	Knowledge *Knowledge

	once     sync.Once
	setupErr error
}

// Secret is one credential value and where it came from (a refusal names
// the source, never the value).
type Secret struct {
	Source string
	Value  string
}

// ErrNotGranted is a /git/NAME the worker has no grant for.
var ErrNotGranted = errors.New(RefuseRepoNotGranted)

// Grant returns the grant named name.
func (s *Service) Grant(name string) (config.Repo, error) {
	if name == KnowledgeName {
		if s.Knowledge == nil {
			return config.Repo{}, fmt.Errorf("%w: this run has no knowledge repo", ErrNotGranted)
		}
		return s.Knowledge.grant(s.Run), nil
	}
	for _, r := range s.Repos {
		if r.Name == name {
			return r, nil
		}
	}
	return config.Repo{}, fmt.Errorf("%w: no [[repo]] named %q in worker %s's spec", ErrNotGranted, name, s.Worker)
}

// setup makes the repos folder, git's empty HOME and the hooks folder.
func (s *Service) setup() error {
	s.once.Do(func() {
		hooks := filepath.Join(s.Dir, ".hooks")
		home := filepath.Join(s.Dir, ".home")
		for _, d := range []string{s.Dir, hooks, home} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				s.setupErr = err
				return
			}
		}
		if len(s.HookArgv) > 0 {
			script := "#!/bin/sh\nexec"
			for _, a := range s.HookArgv {
				script += " '" + strings.ReplaceAll(a, "'", `'\''`) + "'"
			}
			script += " pre-receive\n"
			// Written when it differs, not at every run: its durable write
			// was a disk flush on every gateway run's start.
			if hook := filepath.Join(hooks, "pre-receive"); !sameFile(hook, script, 0o700) {
				if err := fsx.WriteFile(hook, []byte(script), 0o700); err != nil {
					s.setupErr = err
					return
				}
			}
		}
		g := *s.Git
		g.Home, g.HooksDir = home, hooks
		s.Git = &g
	})
	return s.setupErr
}

// sameFile tells whether path holds content with mode perm.
func sameFile(path, content string, perm os.FileMode) bool {
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != perm || st.Size() != int64(len(content)) {
		return false
	}
	b, err := os.ReadFile(path)
	return err == nil && string(b) == content
}

// isKnowledge tells the knowledge repo's grant.
func (s *Service) isKnowledge(r config.Repo) bool {
	return s.Knowledge != nil && r.Name == KnowledgeName && r.Remote == s.Knowledge.Dir
}

// PrepareKnowledge makes the worker's knowledge repo if it is missing,
// under the repo's lock. (Its run/RUN branches are pruned with their
// runs, by PruneKnowledge, not on a run's start.)
func (s *Service) PrepareKnowledge(ctx context.Context) error {
	if s.Knowledge == nil {
		return nil
	}
	if err := s.setup(); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(s.Knowledge.Dir, "HEAD")); err == nil {
		return nil // made: no lock to take
	}
	unlock, err := s.flock(ctx, s.Knowledge.grant(s.Run))
	if err != nil {
		return err
	}
	defer unlock()
	return s.Git.MakeKnowledge(ctx, s.Knowledge.Dir, s.Worker)
}

// PruneKnowledge deletes the run/RUN branches of a worker's knowledge
// repo (dir) whose run folder in runsDir is gone, under the repo's lock
// in reposDir (the worker's repos folder, where its runs take it): the
// branches go with their runs (`roster-runs prune`, runs.keep). No
// knowledge repo: nothing to do. It returns the branches deleted.
func PruneKnowledge(ctx context.Context, reposDir, dir, runsDir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	bin, err := Find()
	if err != nil {
		return nil, err
	}
	s := &Service{Git: &Git{Bin: bin}, Dir: reposDir, Knowledge: &Knowledge{Dir: dir}}
	if err := s.setup(); err != nil {
		return nil, err
	}
	unlock, err := s.flock(ctx, s.Knowledge.grant(""))
	if err != nil {
		return nil, err
	}
	defer unlock()
	return s.Git.PruneRunBranches(ctx, dir, func(run string) bool {
		_, err := os.Lstat(filepath.Join(runsDir, run))
		return !errors.Is(err, os.ErrNotExist) // unreadable: kept
	})
}

// repoDir is where name is served from: a host repo's own path, or the
// mirror, made and refreshed from the upstream first.
func (s *Service) repoDir(ctx context.Context, r config.Repo) (string, error) {
	if err := s.setup(); err != nil {
		return "", err
	}
	if r.Host() {
		return r.Remote, nil
	}
	dir := filepath.Join(s.Dir, r.Name+".git")
	unlock, err := s.flock(ctx, r)
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); errors.Is(err, os.ErrNotExist) {
		if err := s.makeMirror(ctx, dir); err != nil {
			return "", err
		}
	}
	return dir, s.refresh(ctx, r, dir)
}

// makeMirror makes an empty bare repo beside dir and renames it into place.
func (s *Service) makeMirror(ctx context.Context, dir string) error {
	tmp := dir + ".new"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	if _, err := s.Git.Run(ctx, tmp, nil, "init", "--quiet", "--bare"); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("make the mirror: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	return fsx.SyncDir(filepath.Dir(dir))
}

// refresh fetches the upstream's branches into the mirror (pruned: what
// the upstream dropped is dropped), with the credential in git's
// environment, and points the mirror's HEAD where the upstream's points.
func (s *Service) refresh(ctx context.Context, r config.Repo, dir string) error {
	env, err := s.upstreamEnv(r)
	if err != nil {
		return err
	}
	out, err := s.Git.Run(ctx, dir, env, "ls-remote", "--symref", r.Remote, "HEAD")
	if err != nil {
		return s.scrub(r, fmt.Errorf("%w: %v", ErrUpstream, err))
	}
	if head := symrefHead(out); head != "" {
		_, _ = s.Git.Run(ctx, dir, nil, "symbolic-ref", "HEAD", head)
	}
	if _, err := s.Git.Run(ctx, dir, env, "fetch", "--quiet", "--prune", "--no-tags", "--no-write-fetch-head",
		r.Remote, "+refs/heads/*:refs/heads/*"); err != nil {
		return s.scrub(r, fmt.Errorf("%w: %v", ErrUpstream, err))
	}
	return nil
}

// ErrUpstream is a remote that could not be reached or refused roster.
var ErrUpstream = errors.New("upstream")

// upstreamEnv is the environment for git talking to r's upstream.
func (s *Service) upstreamEnv(r config.Repo) ([]string, error) {
	env := transportEnv(r.Remote)
	if s.Token == nil || len(r.Credential) == 0 {
		return env, nil
	}
	tok, err := s.Token(r)
	if err != nil {
		return nil, err
	}
	return append(env, CredentialEnv(r.Remote, tok)...), nil
}

// scrub takes the remote's token out of an error's text (an upstream's
// message never should hold it; this makes sure).
func (s *Service) scrub(r config.Repo, err error) error {
	if err == nil || s.Token == nil || len(r.Credential) == 0 {
		return err
	}
	tok, _ := s.Token(r)
	if tok == "" || !strings.Contains(err.Error(), tok) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), tok, "[credential]"))
}

// symrefHead reads `ls-remote --symref URL HEAD`'s "ref: refs/heads/X\tHEAD".
func symrefHead(out []byte) string {
	for _, l := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(l, "ref: "); ok {
			ref, name, _ := strings.Cut(rest, "\t")
			if name == "HEAD" && strings.HasPrefix(ref, "refs/heads/") && validRefPart(strings.TrimPrefix(ref, "refs/heads/")) == nil {
				return ref
			}
		}
	}
	return ""
}

// Services are the two git services a box may ask for.
const (
	UploadPack  = "git-upload-pack"
	ReceivePack = "git-receive-pack"
)

// protoEnv passes the client's Git-Protocol header to git: version=2 (or
// 1) only, and only for a fetch.
func protoEnv(service, proto string) []string {
	if service == UploadPack && (proto == "version=2" || proto == "version=1") {
		return []string{"GIT_PROTOCOL=" + proto}
	}
	return nil
}

// Advertise writes service's ref advertisement for repo name (the body of
// GET info/refs): refreshed from the upstream first for a remote, so a
// push's thin pack finds its bases and a fetch sees what is there.
func (s *Service) Advertise(ctx context.Context, name, service, proto string, w io.Writer) error {
	r, err := s.Grant(name)
	if err != nil {
		return err
	}
	dir, err := s.repoDir(ctx, r)
	if err != nil {
		return err
	}
	env := protoEnv(service, proto)
	if env == nil {
		fmt.Fprintf(w, "%s", Pkt("# service="+service+"\n"))
		w.Write(Flush)
	}
	cmd := s.Git.Cmd(ctx, dir, nil, env, strings.TrimPrefix(service, "git-"), "--stateless-rpc", "--advertise-refs", dir)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s --advertise-refs: %v: %s", service, err, clip(stderr.String(), 400))
	}
	return nil
}

// UploadPack serves a fetch's request (body, already decompressed) from
// repo name's host copy, refreshed by the advertisement it follows.
func (s *Service) UploadPack(ctx context.Context, name, proto string, body io.Reader, w io.Writer) error {
	r, err := s.Grant(name)
	if err != nil {
		return err
	}
	dir, err := s.servedDir(ctx, r)
	if err != nil {
		return err
	}
	cmd := s.Git.Cmd(ctx, dir, nil, protoEnv(UploadPack, proto), "upload-pack", "--stateless-rpc", dir)
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = body, w, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("upload-pack: %v: %s", err, clip(stderr.String(), 400))
	}
	return nil
}

// servedDir is repoDir without a refresh: the advertisement (the GET
// every fetch and push starts with, v2's too) just made one.
func (s *Service) servedDir(ctx context.Context, r config.Repo) (string, error) {
	if r.Host() {
		return s.repoDir(ctx, r)
	}
	if err := s.setup(); err != nil {
		return "", err
	}
	dir := filepath.Join(s.Dir, r.Name+".git")
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		return s.repoDir(ctx, r)
	}
	return dir, nil
}

// bufReader gives r a bufio.Reader (ReadPush needs one).
func bufReader(r io.Reader) *bufio.Reader {
	if br, ok := r.(*bufio.Reader); ok {
		return br
	}
	return bufio.NewReaderSize(r, 64<<10)
}
