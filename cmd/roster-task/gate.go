package main

import (
	"fmt"

	"github.com/roster-sh/roster/lib/cli"
)

// GateCmd groups the gate verbs.
type GateCmd struct {
	Resolve GateResolveCmd `cmd:"" help:"Approve or deny a gate; the last one of a needs-review task completes it."`
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
	cont, err := p.ResolveGate(env.Ctx, f.ID, c.Gate, c.Decision, c.Why)
	if err != nil {
		return err
	}
	if cont != "" {
		fmt.Fprintln(env.Stdout, cont)
	}
	return nil
}
