package review

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/repos"
	"github.com/roster-sh/roster/lib/tms"
)

// Resolve records decision ("approve" or "deny") on gate of task id in
// partition p, journaled by by ("": owner). A pending repo_push gate's
// push is landed or dropped first; a ref that moved meanwhile turns an
// approval into a denial saying why, and stale is then the error to
// report (exit 13) after the denial is recorded. It returns the
// continuation's id, if the resolution filed one.
func Resolve(ctx context.Context, p *tms.Partition, id, gate, decision, why, by string) (cont string, stale, err error) {
	if g, err := p.FindGate(ctx, id, gate); err == nil && g.Kind == tms.GateRepoPush && g.Push != nil && g.State == tms.GatePending {
		if decision, why, stale, err = landOrDrop(ctx, p.Home, p.Name, g, decision, why); err != nil {
			return "", nil, err
		}
	}
	cont, err = p.ResolveGateBy(ctx, id, gate, decision, why, by)
	if err != nil {
		return "", nil, err
	}
	return cont, stale, nil
}

// ShowPush writes a held push's commits and diffstat to w (patch: the
// whole diff too), as `roster-task gate show` prints them.
func ShowPush(ctx context.Context, h home.Home, worker string, g *tms.Gate, patch bool, w io.Writer) error {
	if g.Kind != tms.GateRepoPush || g.Push == nil {
		return errs.New(errs.ErrUsage, fmt.Sprintf("gate %s is not a held push", g.ID))
	}
	git, dir, _, err := gateRepo(h, worker, g)
	if err != nil {
		return err
	}
	return git.Show(ctx, dir, pushOf(g), patch, w)
}

// landOrDrop carries out a decision on a held push: approve moves the
// ref (fast-forward only; a ref that moved meanwhile turns the approval
// into a denial saying why, and stale is the error to exit with), deny
// drops the pending ref. Any other failure changes nothing.
func landOrDrop(ctx context.Context, h home.Home, worker string, gate *tms.Gate, decision, why string) (string, string, error, error) {
	git, dir, lock, err := gateRepo(h, worker, gate)
	if err != nil {
		return "", "", nil, err
	}
	if decision == "deny" {
		return decision, why, nil, git.Drop(ctx, dir, pushOf(gate))
	}
	err = git.Land(ctx, dir, lock, pushOf(gate))
	if errors.Is(err, repos.ErrNotFastForward) {
		stale := errs.WithHint(errs.New(errs.ErrConflict, "not landed: "+err.Error()), "the gate is recorded denied; the worker's continuation (wake_on_resolve) asks it to rebase")
		_ = git.Drop(ctx, dir, pushOf(gate))
		return "deny", err.Error(), stale, nil
	}
	return decision, why, nil, err
}

// gateRepo finds the host repo a repo_push gate names, in its worker's
// spec, and the hardened git to work on it.
func gateRepo(h home.Home, worker string, gate *tms.Gate) (*repos.Git, string, string, error) {
	spec, err := config.LoadWorker(h, worker)
	if err != nil {
		return nil, "", "", err
	}
	var grant *config.Repo
	for i := range spec.Repos {
		if spec.Repos[i].Name == gate.Push.Repo {
			grant = &spec.Repos[i]
		}
	}
	if grant == nil || !grant.Host() {
		return nil, "", "", errs.New(errs.ErrConflict, fmt.Sprintf("gate %s: worker %s has no host repo %q in its spec any more", gate.ID, worker, gate.Push.Repo))
	}
	bin, err := repos.Find()
	if err != nil {
		return nil, "", "", err
	}
	dir := filepath.Join(h.Worker(worker).Dir, "repos")
	return &repos.Git{Bin: bin, Home: filepath.Join(dir, ".home")}, grant.Remote, filepath.Join(dir, grant.Name+".lock"), nil
}

func pushOf(g *tms.Gate) repos.GateRequest {
	return repos.GateRequest{Repo: g.Push.Repo, Ref: g.Push.Ref, Old: g.Push.Old, New: g.Push.New, Pending: g.Push.Pending}
}
