package main

import (
	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/snap"
)

// ChangesCmd is `roster-snap changes`.
type ChangesCmd struct {
	Worker  string `arg:"" help:"The worker."`
	ID      string `arg:"" help:"Snapshot id or unique prefix."`
	Restore bool   `name:"restore" help:"The change list of the restore that took this pre-restore snapshot (what that restore changed) instead of the snapshot's own."`
}

func (c *ChangesCmd) Run(g *cli.Globals, env *cli.Env) error {
	_, w, err := worker(g, c.Worker)
	if err != nil {
		return err
	}
	_, data, err := snap.ChangeFile(env.Ctx, w, c.ID, c.Restore)
	if err != nil {
		return err
	}
	// The lines are escaped as written (no name can forge one); a
	// terminal gets them through the printable filter all the same, as
	// roster-runs changes prints a run's.
	if !cli.IsTerminal(env.Stdout) {
		_, err = env.Stdout.Write(data)
		return err
	}
	tw := cli.NewPrintableWriter(env.Stdout)
	if _, err := tw.Write(data); err != nil {
		return err
	}
	return tw.Close()
}
