package main

import (
	"os"

	"github.com/roster-sh/roster/lib/box"
	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
)

// ExecCmd is `roster-box exec`.
type ExecCmd struct {
	Tty     bool     `short:"t" name:"tty" help:"Give the command a new pseudo-terminal made inside the box (for a shell or an editor); this terminal is put in raw mode while it runs and restored after."`
	RunID   string   `arg:"" name:"run" help:"The run (any unique prefix of its id) whose box is live."`
	Command []string `arg:"" passthrough:"" help:"The command to run inside the box, after --."`
}

func (c *ExecCmd) Run(g *cli.Globals, env *cli.Env) error {
	if len(c.Command) > 0 && c.Command[0] == "--" {
		c.Command = c.Command[1:]
	}
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	r, err := box.FindRun(h, c.RunID)
	if err != nil {
		return err
	}
	spec, err := config.LoadWorker(h, r.Worker)
	if err != nil {
		return err
	}
	req := box.ExecRequest{Run: r, UID: spec.UID, Argv: c.Command,
		Stdin: env.Stdin, Stdout: env.Stdout, Stderr: env.Stderr, Terminal: c.Tty}
	if f, ok := env.Stdin.(*os.File); ok && c.Tty && box.IsTerminal(f) {
		req.Term = f
	}
	code, err := box.Exec(req)
	if err != nil {
		return err
	}
	if code != 0 {
		return &errs.Exit{Code: code}
	}
	return nil
}
