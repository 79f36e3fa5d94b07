package main

import (
	"fmt"
	"os/exec"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/suite"
	"github.com/roster-sh/roster/lib/tms"
)

// RequeueCmd is `roster-task requeue`.
type RequeueCmd struct {
	ID     string `arg:"" help:"A task id or unique prefix."`
	Worker string `help:"Search only this worker." placeholder:"W"`
}

func (c *RequeueCmd) Run(g *cli.Globals, env *cli.Env) error {
	p, f, err := findTask(g, env, c.Worker, c.ID, true)
	if err != nil {
		return err
	}
	task, changed, err := p.RequeueReaping(env.Ctx, f.ID, tms.ByOwner, func(run string) error {
		// A dead supervisor's container may still run: destroy it before
		// the task can be claimed again.
		box, err := suite.Find("roster-box")
		if err != nil {
			return fmt.Errorf("roster-box not found: %v", err)
		}
		cmd := exec.CommandContext(env.Ctx, box, "--home", p.Home.Dir, "reap", run)
		cmd.Stdout, cmd.Stderr = env.Stderr, env.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("roster-box reap %s: %v", run, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !changed {
		env.Note("task %s is already pending; nothing changed", task.ID)
	}
	fmt.Fprintln(env.Stdout, task.ID)
	return nil
}
