package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/cli"
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
	done := progress(env, &opt, "sweep")
	results, err := snap.Sweep(env.Ctx, h, c.Workers, opt)
	done()
	var fails cli.Failures
	for _, r := range results {
		if r.Err != nil {
			werr := r.Err
			if msg := werr.Error(); !strings.Contains(msg, fmt.Sprintf("%q", r.Worker)) && !strings.Contains(msg, "worker "+r.Worker) {
				werr = fmt.Errorf("worker %s: %w", r.Worker, werr)
			}
			fails.Report(env, werr)
			if c.JSON {
				cli.JSONLine(env.Stdout, takeJSON{Worker: r.Worker, Pruned: []string{}, Error: r.Err.Error()})
			}
			continue
		}
		if c.JSON {
			cli.JSONLine(env.Stdout, takeJSON{Worker: r.Worker, ID: r.Result.ID, Prev: r.Result.Prev,
				Unchanged: r.Result.Unchanged, Disabled: r.Result.Disabled, NoStore: r.Result.NoStore, Changes: len(r.Result.Changes), Pruned: nonNil(r.Result.Pruned)})
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
	return fails.Exit()
}
