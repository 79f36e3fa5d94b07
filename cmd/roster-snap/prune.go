package main

import (
	"fmt"
	"time"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/snap"
)

// PruneCmd is `roster-snap prune`.
type PruneCmd struct {
	Worker string        `arg:"" help:"The worker."`
	Keep   *int          `name:"keep" placeholder:"N" help:"Snapshots to keep (default: store.snapshots from org.toml); the newest is always kept."`
	Daily  *int          `name:"daily" placeholder:"D" help:"Also keep the newest snapshot of each of the last D local days with one (default: store.daily)."`
	Wait   time.Duration `name:"wait" default:"60s" placeholder:"DUR" help:"Wait at most this long for the store lock, then exit 11."`
	JSON   bool          `name:"json" help:"One JSON object per pruned snapshot."`
}

func (c *PruneCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, w, err := worker(g, c.Worker)
	if err != nil {
		return err
	}
	opt, err := options(h, env, c.Wait)
	if err != nil {
		return err
	}
	keep := opt.Keep
	if c.Keep != nil {
		if *c.Keep < 0 {
			return errs.New(errs.ErrUsage, fmt.Sprintf("--keep %d: must be 0 or more", *c.Keep))
		}
		keep = *c.Keep
	}
	if c.Daily != nil {
		if *c.Daily < 0 {
			return errs.New(errs.ErrUsage, fmt.Sprintf("--daily %d: must be 0 or more", *c.Daily))
		}
		opt.Daily = *c.Daily
	}
	pruned, err := snap.Prune(env.Ctx, w, keep, opt)
	for _, id := range pruned {
		if c.JSON {
			cli.JSONLine(env.Stdout, map[string]string{"pruned": id})
		} else {
			fmt.Fprintln(env.Stdout, id)
		}
	}
	return err
}
