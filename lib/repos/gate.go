package repos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
)

// GateRequest is a push to a host repo's protected ref, received and
// judged, its commits in Pending: what Service.Gate opens a repo_push
// gate for on the run's task.
type GateRequest struct {
	Repo, Ref, Old, New, Pending string
	What                         string // the gate's line: ref, commit, commits and diffstat
	Wake                         bool   // the grant's wake_on_resolve
}

// PendingPrefix is where a gated push's commits wait in the host repo.
const PendingPrefix = "refs/roster/pending/"

// gatedCommands is cmds as git receives them: a command vs gates goes to
// a pending ref of its own (created, so the protected ref never moves).
func gatedCommands(cmds []Command, vs []Verdict, run string) []Command {
	out := append([]Command(nil), cmds...)
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	for i := range out {
		if i < len(vs) && vs[i].Gate {
			run := run
			if run == "" {
				run = "adhoc"
			}
			out[i] = Command{Old: strings.Repeat("0", len(cmds[i].New)), New: cmds[i].New,
				Ref: fmt.Sprintf("%s%s-%s-%d", PendingPrefix, run, stamp, i)}
		}
	}
	return out
}

// openGates opens a gate for each gated command of a push, from roster's
// hook, while its objects are still in git's quarantine (qenv): before
// any ref moves, so a gate that cannot be opened refuses the whole push
// (all-or-nothing) instead of leaving the other refs landed. It returns
// what to tell the client, or the reason the push is refused. A gate
// opened before a later one failed stays, pointing at commits that never
// landed: approving it says so (Land), denying it clears it.
func (j *judgeRun) openGates(ctx context.Context, qenv []string) (msgs []string, refusal string) {
	s, r := j.s, j.r
	for i, v := range j.verdicts {
		if !v.Gate {
			continue
		}
		req := GateRequest{Repo: r.Name, Ref: v.Ref, Old: v.Old, New: v.New, Pending: j.sent[i].Ref, Wake: r.WakeOnResolve}
		req.What = fmt.Sprintf("push to %s of repo %s: %s (%s)", strings.TrimPrefix(v.Ref, "refs/heads/"), r.Name, short(v.New), s.Git.summary(ctx, j.dir, qenv, v.Old, v.New))
		id, err := s.Gate(ctx, req)
		if err != nil {
			return nil, "could not open a review gate for " + strings.TrimPrefix(v.Ref, "refs/heads/") + ": " + err.Error()
		}
		msgs = append(msgs, fmt.Sprintf("%s <- %s waits for review (gate %s); `roster-task gate show` shows it", strings.TrimPrefix(v.Ref, "refs/heads/"), short(v.New), id))
	}
	return msgs, ""
}

func short(id string) string {
	if len(id) > 7 {
		return id[:7]
	}
	return id
}

// summary is "2 commits, 3 files changed, 10 insertions(+)" for old..new
// (env: a push's quarantine, where its objects still are).
func (g *Git) summary(ctx context.Context, dir string, env []string, old, new string) string {
	rng := new
	if !isZero(old) {
		rng = old + ".." + new
	}
	n, _ := g.Run(ctx, dir, env, "rev-list", "--count", rng)
	base := old
	if isZero(old) {
		base = g.emptyTree(ctx, dir)
	}
	stat, _ := g.Run(ctx, dir, env, "diff", "--shortstat", base, new)
	return strings.TrimSpace(string(n)) + " commits, " + strings.TrimSpace(string(stat))
}

func (g *Git) emptyTree(ctx context.Context, dir string) string {
	out, err := g.Run(ctx, dir, nil, "hash-object", "-t", "tree", "/dev/null")
	if err != nil {
		return "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
	}
	return strings.TrimSpace(string(out))
}

// ErrNotFastForward is an approval whose ref moved since the push in a
// way the pushed commit does not descend from.
var ErrNotFastForward = errors.New(RefuseNotFastForward)

// Land moves a gated push's ref to its commit, fast-forward only, under
// the repo's lock (lock: data/workers/W/repos/NAME.lock), and drops the
// pending ref. Landing again what already landed is no error (a crash
// between the move and the gate's record).
func (g *Git) Land(ctx context.Context, dir, lock string, p GateRequest) error {
	l, err := fsx.LockPath(ctx, lock, false, fsx.Forever)
	if err != nil {
		return err
	}
	defer l.Unlock()
	if _, err := g.Run(ctx, dir, nil, "cat-file", "-e", p.New+"^{commit}"); err != nil {
		return fmt.Errorf("%w: commit %s is not in the repo (its push was refused after this gate opened, or its pending ref was removed): deny this gate", errs.ErrConflict, short(p.New))
	}
	cur := ""
	if out, err := g.Run(ctx, dir, nil, "rev-parse", "--verify", "-q", p.Ref); err == nil {
		cur = strings.TrimSpace(string(out))
	}
	switch {
	case cur == p.New:
	case cur != "":
		if _, err := g.Run(ctx, dir, nil, "merge-base", "--is-ancestor", cur, p.New); err != nil {
			return fmt.Errorf("%w: %s is at %s now, which %s does not descend from: the worker must rebase and push again",
				ErrNotFastForward, strings.TrimPrefix(p.Ref, "refs/heads/"), short(cur), short(p.New))
		}
		if _, err := g.Run(ctx, dir, nil, "update-ref", "-m", "roster: approved gate", p.Ref, p.New, cur); err != nil {
			return err
		}
	default:
		if _, err := g.Run(ctx, dir, nil, "update-ref", "-m", "roster: approved gate", p.Ref, p.New, strings.Repeat("0", len(p.New))); err != nil {
			return err
		}
	}
	return g.Drop(ctx, dir, p)
}

// Drop deletes a gate's pending ref (a denial, or after landing).
func (g *Git) Drop(ctx context.Context, dir string, p GateRequest) error {
	if !strings.HasPrefix(p.Pending, PendingPrefix) {
		return fmt.Errorf("%q is not a pending ref", p.Pending)
	}
	_, err := g.Run(ctx, dir, nil, "update-ref", "-d", p.Pending)
	return err
}

// Show writes what a gate would land: its commits, the diffstat, and with
// patch the diff.
func (g *Git) Show(ctx context.Context, dir string, p GateRequest, patch bool, w io.Writer) error {
	rng := p.New
	base := p.Old
	if isZero(p.Old) {
		base = g.emptyTree(ctx, dir)
	} else {
		rng = p.Old + ".." + p.New
	}
	out, err := g.Run(ctx, dir, nil, "log", "--no-color", "--format=%h %an: %s", "-n", "100", rng)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s of repo %s: %s <- %s\n\n%s\n", p.Ref, p.Repo, short(p.Old), short(p.New), out)
	args := []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--stat", base, p.New}
	if patch {
		args = []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--stat", "--patch", base, p.New}
	}
	out, err = g.Run(ctx, dir, nil, args...)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}
