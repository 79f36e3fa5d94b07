package main

import (
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/tms"
)

// EditCmd is `roster-task edit`.
type EditCmd struct {
	ID       string   `arg:"" help:"A task id or unique prefix (a pending task)."`
	Worker   string   `help:"Search only this worker." placeholder:"W"`
	Text     *string  `help:"The new text; \"-\" reads it from stdin (at most 64 KiB)." placeholder:"T"`
	At       *string  `help:"Not before TIME: RFC 3339, \"YYYY-MM-DD HH:MM\" (host-local), +DUR, or \"now\" (due now)." placeholder:"TIME"`
	After    []string `help:"Its dependencies become these tasks (repeatable; replaces the list)." placeholder:"ID"`
	NoAfter  bool     `name:"no-after" help:"Drop all its dependencies."`
	Ceiling  *string  `help:"Wall-clock limit of its run; \"\" for its kind's default." placeholder:"DUR"`
	Priority *int     `help:"Higher is claimed first within a standing." placeholder:"N"`
}

func (c *EditCmd) Run(g *cli.Globals, env *cli.Env) error {
	if c.NoAfter && len(c.After) > 0 {
		return errs.New(errs.ErrUsage, "--after and --no-after: give one")
	}
	p, f, err := findTask(g, env, c.Worker, c.ID, true)
	if err != nil {
		return err
	}
	var e tms.Edit
	if c.Text != nil {
		text, err := readText([]string{*c.Text}, env.Stdin)
		if err != nil {
			return err
		}
		e.Text = &text
	}
	if c.At != nil {
		var at time.Time // zero: due now
		if *c.At != "now" {
			if at, err = tms.ParseAt(*c.At, p.Now(), p.Zone()); err != nil {
				return err
			}
		}
		e.At = &at
	}
	if len(c.After) > 0 || c.NoAfter {
		after := append([]string{}, c.After...)
		e.After = &after
	}
	e.Ceiling, e.Priority = c.Ceiling, c.Priority
	if e == (tms.Edit{}) {
		return errs.WithHint(errs.New(errs.ErrUsage, "nothing to change"), "give --text, --at, --after, --no-after, --ceiling or --priority")
	}
	_, changed, err := p.EditTask(env.Ctx, f.ID, e, tms.ByOwner)
	if err != nil {
		return err
	}
	if len(changed) == 0 {
		env.Note("task %s: nothing changed", f.ID)
	} else {
		env.Note("task %s: changed %s", f.ID, strings.Join(changed, ", "))
	}
	return nil
}
