package main

import (
	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/snap"
)

// DiffCmd is `roster-snap diff`.
type DiffCmd struct {
	Worker string `arg:"" help:"The worker."`
	From   string `arg:"" optional:"" help:"Snapshot id or unique prefix (default: the newest)."`
	To     string `arg:"" optional:"" help:"Snapshot id or unique prefix (default: the live store)."`
	JSON   bool   `name:"json" help:"One JSON object per change (JSON Lines)."`
}

func (c *DiffCmd) Run(g *cli.Globals, env *cli.Env) error {
	_, w, err := worker(g, c.Worker)
	if err != nil {
		return err
	}
	cs, err := snap.Diff(env.Ctx, w, c.From, c.To)
	if err != nil {
		return err
	}
	return printChanges(env.Stdout, cs, c.JSON)
}
