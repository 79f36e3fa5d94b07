package main

import (
	"slices"
	"strconv"
	"strings"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/cli/out"
	"github.com/roster-sh/roster/lib/tms"
)

// DueCmd is `roster-task due`.
type DueCmd struct {
	Worker string `arg:"" optional:"" help:"Only this worker (default: every worker)."`
	JSON   bool   `name:"json" help:"Print JSON Lines."`
}

func (c *DueCmd) Run(g *cli.Globals, env *cli.Env) error {
	var rows [][]string
	var held []string // "W: why", for a worker held with nothing pending to show it
	err := eachWorker(g, env, c.Worker, func(p *tms.Partition) error {
		r, err := p.Due(env.Ctx)
		if err != nil {
			return err
		}
		if len(r.Holds) > 0 && !c.JSON && !anyPending(r.Entries) {
			holds := slices.Clone(r.Holds)
			if i := slices.Index(holds, "worker paused"); i >= 0 && p.Spec != nil && !p.Spec.PausedSince.IsZero() {
				holds[i] += " since " + p.Spec.PausedSince.In(p.Org.Zone()).Format("2006-01-02 15:04 MST")
			}
			msg := p.Name + " is held (" + strings.Join(holds, ", ") + "): nothing it is given runs until that clears"
			if slices.Contains(r.Holds, "worker paused") {
				msg += "; `roster worker resume " + p.Name + "` resumes it"
			}
			held = append(held, msg)
		}
		n := 0
		for _, e := range r.Entries {
			if e.Task.State != tms.Pending {
				continue
			}
			ok := e.Status == tms.StateDue
			if c.JSON {
				b := ok
				if err := cli.JSONLine(env.Stdout, taskJSON{Worker: p.Name, Task: e.Task, Eligibility: e.Status, Why: e.Why, Claimable: &b}); err != nil {
					return err
				}
				continue
			}
			order := ""
			if ok {
				n++
				order = strconv.Itoa(n)
			}
			why := e.Why
			if ok {
				why = "claimable now"
			}
			rows = append(rows, []string{p.Name, order, e.ID, e.Status, why, e.Standing, firstLine(e.Text, 50)})
		}
		return nil
	})
	if !c.JSON && (err == nil || len(rows) > 0) { // no bare header after a failure
		if terr := cli.Table(env.Stdout, []string{"WORKER", "ORDER", "ID", "ELIGIBILITY", "WHY", "STANDING", "TEXT"}, rows); terr != nil && err == nil {
			err = terr
		}
		for _, h := range held {
			env.Note("%s", out.Printable(h))
		}
	}
	return err
}

func anyPending(es []tms.Entry) bool {
	for _, e := range es {
		if e.Task.State == tms.Pending {
			return true
		}
	}
	return false
}
