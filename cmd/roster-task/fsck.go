package main

import (
	"fmt"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/tms"
)

// FsckCmd is `roster-task fsck`.
type FsckCmd struct {
	Worker  string `arg:"" optional:"" help:"Only this worker (default: every worker)."`
	Rebuild bool   `help:"Rebuild tasks.json (and the view) from the journal's records."`
}

func (c *FsckCmd) Run(g *cli.Globals, env *cli.Env) error {
	bad, journalBad := false, false
	err := eachWorker(g, env, c.Worker, func(p *tms.Partition) error {
		if c.Rebuild {
			v, err := p.Rebuild(env.Ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stderr, "roster-task: %s: tasks.json rebuilt from the journal at version %d\n", p.Name, v)
		}
		r, err := p.Fsck(env.Ctx)
		if err != nil {
			return err
		}
		for _, n := range r.Notes {
			env.Note("%s: %s", p.Name, n)
		}
		if r.Clean() {
			fmt.Fprintf(env.Stdout, "%s\tok\tversion %d, %d journal lines\n", p.Name, r.Version, r.Lines)
			return nil
		}
		bad = true
		for _, pr := range r.Problems {
			fmt.Fprintf(env.Stdout, "%s\tproblem\t%s\n", p.Name, cli.Printable(pr))
		}
		if r.BadLine > 0 {
			// The journal is the source of truth: a line of it that does
			// not parse is refused data (14), and no rebuild can help.
			return errs.WithHint(errs.New(errs.ErrRefused, fmt.Sprintf("%s: line %d does not parse", p.W.Journal(), r.BadLine)),
				fmt.Sprintf("the journal is the source of truth and nothing repairs it automatically: fix or truncate line %d by hand (keep a copy first); `fsck --rebuild` cannot help", r.BadLine))
		}
		journalBad = journalBad || r.JournalProblem
		return nil
	})
	if err != nil {
		return err
	}
	if journalBad {
		return errs.WithHint(fmt.Errorf("fsck found problems in a journal"), "the journal is the source of truth and nothing repairs it automatically: fix the lines named above by hand (keep a copy first)")
	}
	if bad {
		return errs.WithHint(fmt.Errorf("fsck found problems"), "`roster-task fsck --rebuild WORKER` rebuilds tasks.json from the journal")
	}
	return nil
}
