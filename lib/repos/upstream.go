package repos

import (
	"context"
	"fmt"
	"strings"

	"github.com/roster-sh/roster/lib/config"
)

// pushUpstream pushes cmds (accepted, objects in the quarantine qenv
// names) to r's upstream: atomic, each as its exact old -> new (a lease
// on the old value: nothing the upstream moved meanwhile is overwritten),
// the credential in git's environment. It returns the upstream's own
// words when it refuses.
func (s *Service) pushUpstream(ctx context.Context, r config.Repo, dir string, qenv []string, cmds []Command) (string, error) {
	env, err := s.upstreamEnv(r)
	if err != nil {
		return err.Error(), err
	}
	args := []string{"push", "--atomic", "--porcelain", "--no-verify", "--no-follow-tags", "--no-signed"}
	for _, c := range cmds {
		old := c.Old
		if c.Create() {
			old = ""
		}
		args = append(args, "--force-with-lease="+c.Ref+":"+old)
	}
	args = append(args, r.Remote)
	for _, c := range cmds {
		if c.Delete() {
			args = append(args, ":"+c.Ref)
		} else {
			args = append(args, c.New+":"+c.Ref)
		}
	}
	cmd := s.Git.Cmd(ctx, dir, nil, append(env, qenv...), args...)
	var out, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err = cmd.Run()
	if err == nil {
		return "", nil
	}
	msg := upstreamWords(out.String(), stderr.String())
	return s.scrub(r, fmt.Errorf("%s", msg)).Error(), err
}

// upstreamWords picks what the upstream said from push --porcelain's
// output ("!\tSRC:DST\t[remote rejected] (reason)") and its stderr (the
// upstream's own "remote:" lines, git's "fatal:").
func upstreamWords(out, errText string) string {
	var said []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "!") {
			f := strings.SplitN(l, "\t", 3)
			if len(f) == 3 {
				said = append(said, strings.TrimPrefix(f[1][strings.Index(f[1], ":")+1:], "refs/heads/")+" "+f[2])
			}
		}
	}
	for _, l := range strings.Split(errText, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "remote:") || strings.HasPrefix(l, "fatal:") {
			said = append(said, l)
		}
	}
	if len(said) == 0 {
		return clip(errText, 300)
	}
	return clip(strings.Join(said, "; "), 600)
}
