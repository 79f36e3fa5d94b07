package reaper

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
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
	return git("-C", dir, "checkout", "--quiet", "-b", branch)
}
