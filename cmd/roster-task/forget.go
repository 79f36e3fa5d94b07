package main

import (
	"fmt"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/tms"
)

// ForgetCmd is `roster-task forget` (`roster worker forget`).
type ForgetCmd struct {
	Worker  string `arg:"" help:"The worker."`
	Channel string `required:"" help:"The conversation to remove for good." placeholder:"CHAN"`
	DryRun  bool   `name:"dry-run" help:"List what would go; change nothing."`
}

func (c *ForgetCmd) Run(g *cli.Globals, env *cli.Env) error {
	if _, err := checkChannel(&c.Channel); err != nil {
		return err
	}
	p, err := openPartition(g, c.Worker)
	if err != nil {
		return err
	}
	r, err := p.Forget(env.Ctx, c.Channel, tms.ForgetOptions{DryRun: c.DryRun})
	if err != nil {
		return err
	}
	if r.Resumed != "" {
		env.Note("finished the killed forget of channel %s first", cli.Printable(fmt.Sprintf("%q", r.Resumed)))
	}
	verb, store := "forgot", "deleted"
	if r.DryRun {
		verb, store = "would forget", "to delete"
	}
	k := r.Counts
	st := "none"
	if k.Store {
		st = store
	}
	conv := ""
	if k.Conversation {
		conv = ", conversation record " + store
	}
	fmt.Fprintf(env.Stdout, "%s channel %s of %s: %d tasks canceled, channel store %s, %d snapshots (%d entries), %d runs, %d journal lines%s\n",
		verb, cli.Printable(fmt.Sprintf("%q", c.Channel)), p.Name, k.Tasks, st, k.Snapshots, k.Entries, k.Runs, k.Lines, conv)
	return nil
}
