package main

import (
	"context"
	"fmt"
	"time"

	"github.com/roster-sh/roster/lib/home"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/snap"
)

// PinCmd is `roster-snap pin`.
type PinCmd struct {
	Worker string        `arg:"" help:"The worker."`
	ID     string        `arg:"" help:"The snapshot (an id or a unique prefix)."`
	Wait   time.Duration `name:"wait" default:"60s" placeholder:"DUR" help:"Wait at most this long for the store lock, then exit 11."`
}

// UnpinCmd is `roster-snap unpin`.
type UnpinCmd struct {
	Worker string        `arg:"" help:"The worker."`
	ID     string        `arg:"" help:"The snapshot (an id or a unique prefix)."`
	Wait   time.Duration `name:"wait" default:"60s" placeholder:"DUR" help:"Wait at most this long for the store lock, then exit 11."`
}

func (c *PinCmd) Run(g *cli.Globals, env *cli.Env) error {
	return pin(g, env, c.Worker, c.ID, c.Wait, snap.Pin)
}

func (c *UnpinCmd) Run(g *cli.Globals, env *cli.Env) error {
	return pin(g, env, c.Worker, c.ID, c.Wait, snap.Unpin)
}

// pin runs Pin or Unpin and prints the snapshot's id.
func pin(g *cli.Globals, env *cli.Env, name, prefix string, wait time.Duration,
	do func(context.Context, home.Worker, string, snap.Options) (string, error)) error {
	h, w, err := worker(g, name)
	if err != nil {
		return err
	}
	opt, err := options(h, env, wait)
	if err != nil {
		return err
	}
	id, err := do(env.Ctx, w, prefix, opt)
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, id)
	return nil
}
