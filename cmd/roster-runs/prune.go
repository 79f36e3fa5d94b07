package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/repos"
	"github.com/roster-sh/roster/lib/runs"
)

// PruneCmd deletes old run folders.
type PruneCmd struct {
	Worker    []string `short:"w" placeholder:"W" help:"Only this worker's runs (repeatable; default: every worker)."`
	Keep      *int     `placeholder:"N" help:"Keep the newest N runs per worker (default: [storage] runs.keep, unless --older-than is given alone)."`
	OlderThan string   `placeholder:"DUR" help:"Delete only runs that started more than DUR ago (e.g. 36h, 30d)."`
	DryRun    bool     `help:"Print what would be deleted; delete nothing."`
}

func (c *PruneCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	o := runs.PruneOptions{Keep: -1, DryRun: c.DryRun, Now: time.Now()}
	for _, w := range c.Worker {
		if _, err := h.ExistingWorker(w); err != nil {
			return err
		}
	}
	if len(c.Worker) > 0 {
		o.Workers = c.Worker
	}
	if c.OlderThan != "" {
		if o.OlderThan, err = runs.ParseAge(c.OlderThan); err != nil {
			return err
		}
	}
	switch {
	case c.Keep != nil:
		if *c.Keep < 0 {
			return errs.New(errs.ErrUsage, "--keep: want a number of runs, 0 or more")
		}
		o.Keep = *c.Keep
	case c.OlderThan == "":
		org, err := config.LoadOrg(h)
		if err != nil {
			return err
		}
		o.Keep = org.Storage.RunsKeep
	}
	pruned, problems := runs.Prune(h, o)
	for _, p := range pruned {
		fmt.Fprintln(env.Stdout, p.ID)
	}
	if c.DryRun {
		env.Warn("dry run: %d run folders would be deleted, none was", len(pruned))
	}
	if !c.DryRun {
		problems = append(problems, pruneKnowledge(env.Ctx, h, pruned)...)
	}
	var fails cli.Failures
	for _, p := range problems {
		fails.Report(env, p)
	}
	return fails.Exit()
}

// pruneKnowledge deletes, in each worker whose runs were pruned, the
// knowledge repo's run/RUN branches whose run folder is gone: knowledge
// branches go with their runs (docs/repos.md). A worker with no knowledge
// repo is passed over; one whose branches cannot be pruned is a problem
// that leaves the others to go on.
func pruneKnowledge(ctx context.Context, h home.Home, pruned []runs.Pruned) []error {
	var problems []error
	done := map[string]bool{}
	for _, p := range pruned {
		if done[p.Worker] {
			continue
		}
		done[p.Worker] = true
		w := h.Worker(p.Worker)
		if _, err := repos.PruneKnowledge(ctx, filepath.Join(w.Dir, "repos"), w.Knowledge(), w.Runs()); err != nil {
			problems = append(problems, &runs.PruneError{Worker: p.Worker, Err: fmt.Errorf("its knowledge repo's run branches: %w", err)})
		}
	}
	return problems
}
