package reaper

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// KnowledgeTimeout bounds the knowledge clone: a box whose gateway does
// not answer starts without it rather than not at all.
const KnowledgeTimeout = 2 * time.Minute

// Knowledge clones the run's knowledge repo into dir with the box's own
// git, as the box user, and checks out branch, the run's own (empty: stay
// on main, a read-only clone). With a bundle (the host's copy of main,
// written for this run) it clones from that, with origin at url (the
// gateway's /git/knowledge), which fetches and pushes go to; without one,
// or if that fails, it clones url itself. The host never checks out a
// tree (docs/repos.md). An error says why; the box goes on without
// ~/knowledge.
func Knowledge(url, dir, branch, bundle string, env []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), KnowledgeTimeout)
	defer cancel()
	git := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			msg := strings.TrimSpace(out.String())
			if len(msg) > 400 {
				msg = msg[:400] + "..."
			}
			if ctx.Err() != nil {
				msg = "no answer in " + KnowledgeTimeout.String()
			}
			return errors.New("git " + args[0] + ": " + err.Error() + ": " + msg)
		}
		return nil
	}
	cloned := false
	if bundle != "" {
		if _, err := os.Stat(bundle); err == nil {
			// url read from the bundle for this clone alone: origin stays
			// url (one git less than a clone of the bundle and a set-url).
			err = git("-c", "url."+bundle+".insteadOf="+url, "clone", "--quiet", "--branch", "main", "--", url, dir)
			if cloned = err == nil; !cloned {
				os.RemoveAll(dir) // the gateway's clone below starts afresh
			}
		}
	}
	if !cloned {
		if err := git("clone", "--quiet", "--", url, dir); err != nil {
			return err
		}
	}
	if branch == "" {
		return nil
	}
	if startBranch(dir, branch) == nil {
		return nil
	}
	return git("-C", dir, "checkout", "--quiet", "-b", branch)
}

// startBranch makes branch at the commit main is on in the fresh clone
// dir and puts HEAD on it, as `git checkout -b branch` does from main
// (the index and tree already are that commit's), with no git process:
// one exec less on every start. It writes only a loose ref and HEAD, each
// by rename; anything not as a fresh clone leaves it is an error, and the
// caller asks git instead.
func startBranch(dir, branch string) error {
	gitDir := filepath.Join(dir, ".git")
	if b, err := os.ReadFile(filepath.Join(gitDir, "HEAD")); err != nil || string(b) != "ref: refs/heads/main\n" {
		return errors.New("HEAD is not main")
	}
	b, err := os.ReadFile(filepath.Join(gitDir, "refs", "heads", "main"))
	if err != nil {
		return err
	}
	id := strings.TrimSuffix(string(b), "\n")
	if !objectID(id) || strings.Contains(branch, "..") || strings.HasPrefix(branch, "/") {
		return errors.New("main or the branch is not as expected")
	}
	ref := filepath.Join(gitDir, "refs", "heads", filepath.FromSlash(branch))
	if _, err := os.Lstat(ref); err == nil {
		return errors.New("the branch exists")
	}
	if err := os.MkdirAll(filepath.Dir(ref), 0o755); err != nil {
		return err
	}
	if err := writeRenamed(ref, id+"\n"); err != nil {
		return err
	}
	return writeRenamed(filepath.Join(gitDir, "HEAD"), "ref: refs/heads/"+branch+"\n")
}

// writeRenamed writes s to path through a file beside it, renamed over.
func writeRenamed(path, s string) error {
	tmp := path + ".roster"
	if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// objectID tells a full hex object name.
func objectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
