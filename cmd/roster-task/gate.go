package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/repos"
	"github.com/roster-sh/roster/lib/tms"
)

// GateCmd groups the gate verbs.
type GateCmd struct {
	Show    GateShowCmd    `cmd:"" help:"What a gate asks: a proposal's text, or a held push's commits and diffstat (--patch: the diff)."`
	Resolve GateResolveCmd `cmd:"" help:"Approve or deny a gate; the last one of a needs-review task completes it. Approving a held push lands it, fast-forward only."`
}

// GateShowCmd is `roster-task gate show`.
type GateShowCmd struct {
	ID     string `arg:"" help:"A task id or unique prefix."`
	Gate   string `arg:"" help:"The gate's id (g1, g2, ...)."`
	Worker string `help:"Search only this worker." placeholder:"W"`
	Patch  bool   `help:"For a held push (repo_push): the whole diff too."`
}

func (c *GateShowCmd) Run(g *cli.Globals, env *cli.Env) error {
	p, f, err := findTask(g, env, c.Worker, c.ID, true)
	if err != nil {
		return err
	}
	gate, err := p.FindGate(env.Ctx, f.ID, c.Gate)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "gate %s of task %s (%s): %s\n", gate.ID, f.ID, gate.State, cli.Printable(gate.What))
	if gate.Kind != tms.GateRepoPush || gate.Push == nil {
		return nil
	}
	git, dir, _, err := gateRepo(g, p.Name, gate)
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout)
	return git.Show(env.Ctx, dir, pushOf(gate), c.Patch, cli.NewPrintableWriter(env.Stdout))
}

// GateResolveCmd is `roster-task gate resolve`.
type GateResolveCmd struct {
	ID       string `arg:"" help:"A task id or unique prefix."`
	Gate     string `arg:"" help:"The gate's id (g1, g2, ...)."`
	Decision string `arg:"" enum:"approve,deny" help:"approve or deny."`
	Worker   string `help:"Search only this worker." placeholder:"W"`
	Why      string `help:"The reason, carried to the continuation." placeholder:"TEXT"`
}

func (c *GateResolveCmd) Run(g *cli.Globals, env *cli.Env) error {
	p, f, err := findTask(g, env, c.Worker, c.ID, true) // a finished one: 13, not 12
	if err != nil {
		return err
	}
	decision, why := c.Decision, c.Why
	var stale error
	if gate, err := p.FindGate(env.Ctx, f.ID, c.Gate); err == nil && gate.Kind == tms.GateRepoPush && gate.Push != nil && gate.State == tms.GatePending {
		if decision, why, stale, err = landOrDrop(g, env, p.Name, gate, decision, why); err != nil {
			return err
		}
	}
	cont, err := p.ResolveGate(env.Ctx, f.ID, c.Gate, decision, why)
	if err != nil {
		return err
	}
	if cont != "" {
		fmt.Fprintln(env.Stdout, cont)
	}
	return stale
}

// landOrDrop carries out a decision on a held push: approve moves the
// ref (fast-forward only; a ref that moved meanwhile turns the approval
// into a denial saying why, and stale is the error to exit with), deny
// drops the pending ref. Any other failure changes nothing.
func landOrDrop(g *cli.Globals, env *cli.Env, worker string, gate *tms.Gate, decision, why string) (string, string, error, error) {
	git, dir, lock, err := gateRepo(g, worker, gate)
	if err != nil {
		return "", "", nil, err
	}
	if decision == "deny" {
		return decision, why, nil, git.Drop(env.Ctx, dir, pushOf(gate))
	}
	err = git.Land(env.Ctx, dir, lock, pushOf(gate))
	if errors.Is(err, repos.ErrNotFastForward) {
		stale := errs.WithHint(errs.New(errs.ErrConflict, "not landed: "+err.Error()), "the gate is recorded denied; the worker's continuation (wake_on_resolve) asks it to rebase")
		_ = git.Drop(env.Ctx, dir, pushOf(gate))
		return "deny", err.Error(), stale, nil
	}
	return decision, why, nil, err
}

// gateRepo finds the host repo a repo_push gate names, in its worker's
// spec, and the hardened git to work on it.
func gateRepo(g *cli.Globals, worker string, gate *tms.Gate) (*repos.Git, string, string, error) {
	h, err := g.OpenHome()
	if err != nil {
		return nil, "", "", err
	}
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
