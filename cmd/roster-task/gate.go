package main

import (
	"fmt"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/review"
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
	fmt.Fprintln(env.Stdout)
	return review.ShowPush(env.Ctx, p.Home, p.Name, gate, c.Patch, cli.NewPrintableWriter(env.Stdout))
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
	cont, stale, err := review.Resolve(env.Ctx, p, f.ID, c.Gate, c.Decision, c.Why, tms.ByOwner)
	if err != nil {
		return err
	}
	if cont != "" {
		fmt.Fprintln(env.Stdout, cont)
	}
	return stale
}
