package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/snap"
)

// RestoreCmd is `roster-snap restore`.
type RestoreCmd struct {
	Worker  string        `arg:"" help:"The worker."`
	List    bool          `name:"list" help:"List the snapshots instead (same as roster-snap ls)."`
	From    *string       `name:"from" placeholder:"ID" help:"The snapshot to restore: an id or unique prefix (default: the newest, which right after a restore is its pre-restore snapshot: running restore twice undoes it)."`
	Channel *string       `name:"channel" placeholder:"CHAN" help:"Restore only this channel's store."`
	Path    *string       `name:"path" placeholder:"PATH" help:"Restore only this file or folder, a path below the store (below the channel's store with --channel)."`
	DryRun  bool          `name:"dry-run" help:"Print the change list the restore would make; change nothing."`
	Force   bool          `name:"force" help:"Restore even while a box of the worker is live (it keeps the old tree until it ends)."`
	Wait    time.Duration `name:"wait" default:"60s" placeholder:"DUR" help:"Wait at most this long for the store lock, then exit 11."`
	JSON    bool          `name:"json" help:"JSON output (with --dry-run: one object per change)."`
}

type restoreJSON struct {
	Worker     string   `json:"worker"`
	From       string   `json:"from"`
	PreRestore string   `json:"pre_restore"`
	Path       string   `json:"path,omitempty"`
	Put        bool     `json:"put_back,omitempty"`
	Changes    int      `json:"changes"`
	Trashed    []string `json:"trashed"`
}

func (c *RestoreCmd) Run(g *cli.Globals, env *cli.Env) error {
	if c.List {
		return list(g, env, c.Worker, c.JSON)
	}
	// Given but empty is a mistake (an unset variable in a script), never
	// "the newest" or "every tree".
	from, channel := "", ""
	if c.From != nil {
		if *c.From == "" {
			return errs.New(errs.ErrUsage, "--from: empty snapshot id (leave --from out for the newest)")
		}
		from = *c.From
	}
	if c.Channel != nil {
		if *c.Channel == "" {
			return errs.New(errs.ErrUsage, "--channel: empty channel name (leave --channel out to restore every tree)")
		}
		channel = *c.Channel
	}
	path := ""
	if c.Path != nil {
		p, err := snap.CleanRestorePath(*c.Path, channel == "")
		if err != nil {
			return err
		}
		path = p
	}
	h, w, err := worker(g, c.Worker)
	if err != nil {
		return err
	}
	opt, err := options(h, env, c.Wait)
	if err != nil {
		return err
	}
	done := func() {}
	if !c.DryRun {
		done = progress(env, &opt, "restore")
	}
	r, err := snap.Restore(env.Ctx, w, snap.RestoreOptions{Options: opt, From: from, Channel: channel, Path: path, DryRun: c.DryRun, Force: c.Force})
	done()
	if err != nil {
		if r != nil && r.PreRestore != "" {
			return errs.WithHint(err, "the state before the restore is snapshot "+r.PreRestore)
		}
		return err
	}
	if c.DryRun {
		return printChanges(env.Stdout, r.Changes, c.JSON)
	}
	for _, t := range r.Trashed {
		env.Warn("a box is live: the old tree stays in store-snapshots/.trash/%s until no box of %s is live", t, c.Worker)
	}
	if c.JSON {
		return cli.JSONLine(env.Stdout, restoreJSON{Worker: c.Worker, From: r.From, PreRestore: r.PreRestore,
			Path: path, Put: r.Put, Changes: len(r.Changes), Trashed: nonNil(r.Trashed)})
	}
	undo := fmt.Sprintf("roster-snap restore %s --from %s", c.Worker, r.PreRestore)
	if channel != "" {
		undo += " --channel " + strconv.Quote(channel)
	}
	what := c.Worker
	if path != "" {
		what = strconv.Quote(path) + " of " + c.Worker
		// A path the restore put back is not in its undo snapshot: the
		// undo is that tree's restore (exact until something else changes).
		if !r.Put {
			undo += " --path " + strconv.Quote(path)
		}
	}
	fmt.Fprintf(env.Stderr, "roster-snap: restored %s from snapshot %s; undo with `%s`\n", what, r.From, undo)
	fmt.Fprintln(env.Stdout, r.PreRestore)
	return nil
}
