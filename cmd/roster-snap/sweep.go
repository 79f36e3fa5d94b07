package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/snap"
)

// SweepCmd is `roster-snap sweep`.
type SweepCmd struct {
	Workers []string      `arg:"" optional:"" name:"worker" help:"Workers to sweep (default: every worker)."`
	Wait    time.Duration `name:"wait" default:"60s" placeholder:"DUR" help:"Wait at most this long for each store lock; a busy store is skipped (exit 11 at the end)."`
	JSON    bool          `name:"json" help:"One JSON object per worker (JSON Lines)."`
}

func (c *SweepCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	for _, n := range c.Workers {
		if err := home.ValidWorker(n); err != nil {
			return err
		}
	}
	opt, err := options(h, env, c.Wait)
	if err != nil {
		return err
	}
	results, err := snap.Sweep(env.Ctx, h, c.Workers, opt)
	var first error
	for _, r := range results {
		if r.Err != nil {
			msg := r.Err.Error()
			if !strings.Contains(msg, fmt.Sprintf("%q", r.Worker)) && !strings.Contains(msg, "worker "+r.Worker) {
				msg = fmt.Sprintf("worker %s: %s", r.Worker, msg)
			}
			fmt.Fprintf(env.Stderr, "roster-snap: error: %s\n", msg)
			if h := errs.HintOf(r.Err); h != "" {
				fmt.Fprintf(env.Stderr, "roster-snap: hint: %s\n", h)
			}
			if first == nil {
				first = r.Err
			}
			if c.JSON {
				cli.JSONLine(env.Stdout, takeJSON{Worker: r.Worker, Pruned: []string{}, Error: r.Err.Error()})
			}
			continue
		}
		if c.JSON {
			cli.JSONLine(env.Stdout, takeJSON{Worker: r.Worker, ID: r.Result.ID, Prev: r.Result.Prev,
				Unchanged: r.Result.Unchanged, Disabled: r.Result.Disabled, Changes: len(r.Result.Changes), Pruned: nonNil(r.Result.Pruned)})
		} else if r.Result.ID != "" {
			fmt.Fprintf(env.Stdout, "%s %s\n", r.Worker, r.Result.ID)
		}
	}
	if len(results) > 0 && results[0].Result != nil && results[0].Result.Disabled {
		env.Warn("snapshots are off (store.snapshots = 0 in org.toml): none taken")
	}
	if err != nil {
		return err
	}
	if first != nil {
		return &errs.Exit{Code: errs.Code(first)}
	}
	return nil
}
