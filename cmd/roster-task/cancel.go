package main

import (
	"os/exec"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/suite"
	"github.com/roster-sh/roster/lib/tms"
)

// CancelCmd is `roster-task cancel`.
type CancelCmd struct {
	ID     string `arg:"" help:"A task id or unique prefix."`
	Worker string `help:"Search only this worker." placeholder:"W"`
	Why    string `help:"Why, for the journal." placeholder:"TEXT"`
}

func (c *CancelCmd) Run(g *cli.Globals, env *cli.Env) error {
	p, f, err := findTask(g, env, c.Worker, c.ID, true) // a finished one: 13, not 12
	if err != nil {
		return err
	}
	run, err := p.Cancel(env.Ctx, f.ID, c.Why, tms.ByOwner)
	if err != nil || run == "" {
		return err
	}
	// The task is canceled under the lock already; now end its box. Its
	// supervisor, finding the claim gone, records the run canceled.
	box, ferr := suite.Find("roster-box")
	if ferr != nil {
		env.Warn("task %s canceled; its box (run %s) was not killed: roster-box not found", f.ID, run)
		return nil
	}
	cmd := exec.CommandContext(env.Ctx, box, "--home", p.Home.Dir, "kill", run)
	cmd.Stdout, cmd.Stderr = env.Stderr, env.Stderr
	if err := cmd.Run(); err != nil {
		env.Warn("task %s canceled; roster-box kill %s: %v", f.ID, run, err)
	}
	return nil
}
