package main

import (
	"strconv"
	"strings"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/tms"
)

// LsCmd is `roster-task ls`.
type LsCmd struct {
	Worker string   `arg:"" optional:"" help:"Only this worker (default: every worker)."`
	All    bool     `help:"Also list finished tasks (completed, failed, canceled) from the journal."`
	State  []string `placeholder:"STATE" enum:"pending,claimed,needs-review,completed,failed,canceled" help:"Only tasks in STATE (repeatable): pending, claimed, needs-review, or a finished one (completed, failed, canceled: read from the journal, as --all)."`
	JSON   bool     `name:"json" help:"Print JSON Lines."`
}

// wants reports whether --state lets a task in state through.
func (c *LsCmd) wants(state string) bool {
	if len(c.State) == 0 {
		return true
	}
	for _, s := range c.State {
		if s == state {
			return true
		}
	}
	return false
}

// wantsFinished reports whether finished tasks are listed.
func (c *LsCmd) wantsFinished() bool {
	if len(c.State) == 0 {
		return c.All
	}
	return c.wants(tms.Completed) || c.wants(tms.Failed) || c.wants(tms.Canceled)
}

func (c *LsCmd) Run(g *cli.Globals, env *cli.Env) error {
	var rows [][]string
	err := eachWorker(g, env, c.Worker, func(p *tms.Partition) error {
		r, err := p.Due(env.Ctx)
		if err != nil {
			return err
		}
		var finished []tms.Task
		if c.wantsFinished() {
			if finished, err = p.Finished(); err != nil {
				return err
			}
		}
		for _, e := range r.Entries {
			if !c.wants(e.Task.State) {
				continue
			}
			if c.JSON {
				if err := cli.JSONLine(env.Stdout, taskJSON{Worker: p.Name, Task: e.Task, Eligibility: e.Status, Why: e.Why}); err != nil {
					return err
				}
				continue
			}
			rows = append(rows, []string{e.ID, p.Name, e.Task.State, eligibilityText(e.Eligibility), e.Standing, e.Kind, strconv.Itoa(e.Priority), firstLine(e.Text, 60)})
		}
		for _, t := range finished {
			if !c.wants(t.State) {
				continue
			}
			if c.JSON {
				if err := cli.JSONLine(env.Stdout, taskJSON{Worker: p.Name, Task: t}); err != nil {
					return err
				}
				continue
			}
			rows = append(rows, []string{t.ID, p.Name, t.State, fmtTime(t.FinishedAt, p.Zone()), t.Standing, t.Kind, strconv.Itoa(t.Priority), firstLine(t.Text, 60)})
		}
		return nil
	})
	if !c.JSON && (err == nil || len(rows) > 0) { // no bare header after a failure
		if terr := cli.Table(env.Stdout, []string{"ID", "WORKER", "STATE", "ELIGIBILITY", "STANDING", "KIND", "PRI", "TEXT"}, rows); terr != nil && err == nil {
			err = terr
		}
	}
	return err
}

func eligibilityText(e tms.Eligibility) string {
	switch e.Status {
	case tms.StateDue:
		return "due"
	case tms.StateLate, tms.StateHeld, tms.StateBlocked, tms.StateWaiting:
		return strings.TrimPrefix(e.Why, "")
	case tms.StateScheduled:
		return e.Why
	case tms.StateClaimed:
		return e.Why
	}
	return e.Why
}
