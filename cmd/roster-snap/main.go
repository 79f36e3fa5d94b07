// Command roster-snap takes, lists, compares and restores snapshots of a
// worker's store and channel stores (store.md; tools.md, "roster-snap").
//
// Every verb is one lib/snap call: take and sweep run after boxes (the
// supervisor runs `roster-snap take W --run RUN`, the dispatcher runs
// `roster-snap sweep` daily); restore is for people.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/snap"
)

// CLI is the grammar.
type CLI struct {
	cli.Globals

	Take    TakeCmd    `cmd:"" help:"Snapshot a worker's store and channel stores if anything changed; prints the new id."`
	Ls      LsCmd      `cmd:"" help:"List a worker's snapshots, newest first, with their apparent size and the disk space they share and own."`
	Diff    DiffCmd    `cmd:"" help:"Itemized changes between two snapshots (default: the newest snapshot vs the live store)."`
	Restore RestoreCmd `cmd:"" help:"Restore a worker's store (and channel stores) from a snapshot; prints the pre-restore snapshot id (the undo)."`
	Sweep   SweepCmd   `cmd:"" help:"Take a snapshot of every worker whose store changed (daily)."`
	Prune   PruneCmd   `cmd:"" help:"Keep only the newest N snapshots of a worker."`
}

func main() {
	os.Exit(cli.Main("roster-snap", &CLI{}, os.Args[1:]))
}

// worker opens the home and checks the worker's name.
func worker(g *cli.Globals, name string) (home.Home, home.Worker, error) {
	h, err := g.OpenHome()
	if err != nil {
		return h, home.Worker{}, err
	}
	if err := home.ValidWorker(name); err != nil {
		return h, home.Worker{}, err
	}
	// A spec that cannot be read sets the worker aside everywhere
	// (layout.md): exit 14 naming it, as sweep does. (No spec at all is
	// fine here: the snapshots need only the worker's folder.)
	if _, err := config.LoadWorker(h, name); err != nil && errors.Is(err, errs.ErrRefused) {
		return h, home.Worker{}, err
	}
	return h, h.Worker(name), nil
}

// options loads org.toml's [storage] settings.
func options(h home.Home, env *cli.Env, wait time.Duration) (snap.Options, error) {
	org, err := config.LoadOrg(h)
	if err != nil {
		return snap.Options{}, err
	}
	for _, w := range org.Warnings {
		env.Warn("%s", w)
	}
	switch {
	case wait < 0:
		return snap.Options{}, errs.New(errs.ErrUsage, fmt.Sprintf("--wait %s: must not be negative", wait))
	case wait == 0:
		wait = snap.NoWait // one try, then exit 11
	}
	return snap.Options{Keep: org.Storage.Snapshots, MinFree: org.Storage.MinFree, Wait: wait}, nil
}

// progress draws a bar on stderr only when stderr is a terminal.
func progress(env *cli.Env, what string, total int) (func(int), func()) {
	f, ok := env.Stderr.(*os.File)
	if !ok {
		return nil, func() {}
	}
	if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err != nil {
		return nil, func() {}
	}
	bar := progressbar.NewOptions(total,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetItsString("entries"),
		progressbar.OptionShowIts(),
	)
	return func(n int) { bar.Add(n) }, func() { bar.Finish(); bar.Clear() }
}

func printChanges(w io.Writer, cs []snap.Change, asJSON bool) error {
	if asJSON {
		for i := range cs {
			if err := cli.JSONLine(w, cs[i].JSON()); err != nil {
				return err
			}
		}
		return nil
	}
	_, err := w.Write(snap.ChangeList(cs))
	return err
}

// TakeCmd is `roster-snap take`.
type TakeCmd struct {
	Worker string        `arg:"" help:"The worker."`
	RunID  string        `name:"run" placeholder:"RUN" help:"Also write the change list to runs/RUN/store-changes.txt."`
	Wait   time.Duration `name:"wait" default:"60s" placeholder:"DUR" help:"Wait at most this long for the store lock, then exit 11 (store busy)."`
	JSON   bool          `name:"json" help:"Print the outcome as one JSON object."`
}

type takeJSON struct {
	Worker    string   `json:"worker"`
	ID        string   `json:"id"`
	Prev      string   `json:"prev"`
	Unchanged bool     `json:"unchanged"`
	Disabled  bool     `json:"disabled"`
	Changes   int      `json:"changes"`
	Pruned    []string `json:"pruned"`
	Error     string   `json:"error,omitempty"`
}

func (c *TakeCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, w, err := worker(g, c.Worker)
	if err != nil {
		return err
	}
	runDir := ""
	if c.RunID != "" {
		if !home.IsRunID(c.RunID) {
			// A unique prefix names a run (layout.md), as everywhere; what
			// cannot begin a run id is a usage error.
			const sample = "2000-01-01-00-00-00-aaaa"
			if len(c.RunID) > len(sample) || !home.IsRunID(c.RunID+sample[len(c.RunID):]) {
				return errs.New(errs.ErrUsage, fmt.Sprintf("run %q: not a run id or the start of one (YYYY-MM-DD-HH-MM-SS-xxxx)", c.RunID))
			}
			ids, err := runs.IDs(w)
			if err != nil {
				return err
			}
			if c.RunID, err = home.Resolve("run", c.RunID, ids); err != nil {
				return err
			}
		}
		runDir = w.Run(c.RunID)
		if fi, err := os.Stat(runDir); err != nil || !fi.IsDir() {
			return errs.New(errs.ErrNotFound, fmt.Sprintf("run %s of worker %q: not found", c.RunID, c.Worker))
		}
	}
	opt, err := options(h, env, c.Wait)
	if err != nil {
		return err
	}
	var done func()
	opt.Progress, done = progress(env, "snapshot "+c.Worker, -1)
	r, err := snap.Take(env.Ctx, w, opt)
	done()
	if err != nil {
		return err
	}
	if r.Disabled {
		env.Warn("snapshots are off (store.snapshots = 0 in org.toml): none taken")
	}
	if runDir != "" && !r.Disabled {
		if err := fsx.WriteFile(home.StoreChanges(runDir), snap.ChangeList(r.Changes), 0o644); err != nil {
			return err
		}
	}
	if c.JSON {
		return cli.JSONLine(env.Stdout, takeJSON{Worker: c.Worker, ID: r.ID, Prev: r.Prev, Unchanged: r.Unchanged,
			Disabled: r.Disabled, Changes: len(r.Changes), Pruned: nonNil(r.Pruned)})
	}
	if r.ID != "" {
		fmt.Fprintln(env.Stdout, r.ID)
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// LsCmd is `roster-snap ls`.
type LsCmd struct {
	Worker string `arg:"" help:"The worker."`
	JSON   bool   `name:"json" help:"One JSON object per snapshot (JSON Lines)."`
}

func (c *LsCmd) Run(g *cli.Globals, env *cli.Env) error {
	return list(g, env, c.Worker, c.JSON)
}

func list(g *cli.Globals, env *cli.Env, name string, asJSON bool) error {
	_, w, err := worker(g, name)
	if err != nil {
		return err
	}
	infos, err := snap.List(env.Ctx, w)
	if err != nil {
		return err
	}
	if asJSON {
		for _, in := range infos {
			if err := cli.JSONLine(env.Stdout, in); err != nil {
				return err
			}
		}
		return nil
	}
	rows := make([][]string, 0, len(infos))
	for _, in := range infos {
		label := in.Label
		if label == "" {
			label = "-"
		}
		rows = append(rows, []string{in.ID, label, strconv.Itoa(in.Files), size(in.Bytes), size(in.Shared), size(in.Own)})
	}
	// APPARENT is the files' length (a sparse file counts whole); the DISK
	// columns are allocated space, and DISK-OWN is what deleting it frees.
	return cli.Table(env.Stdout, []string{"ID", "LABEL", "FILES", "APPARENT", "DISK-SHARED", "DISK-OWN"}, rows)
}

func size(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatInt(n, 10) + "B"
	}
	f := float64(n)
	i := -1
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + string(units[i]) + "iB"
}

// DiffCmd is `roster-snap diff`.
type DiffCmd struct {
	Worker string `arg:"" help:"The worker."`
	From   string `arg:"" optional:"" help:"Snapshot id or unique prefix (default: the newest)."`
	To     string `arg:"" optional:"" help:"Snapshot id or unique prefix (default: the live store)."`
	JSON   bool   `name:"json" help:"One JSON object per change (JSON Lines)."`
}

func (c *DiffCmd) Run(g *cli.Globals, env *cli.Env) error {
	_, w, err := worker(g, c.Worker)
	if err != nil {
		return err
	}
	cs, err := snap.Diff(env.Ctx, w, c.From, c.To)
	if err != nil {
		return err
	}
	return printChanges(env.Stdout, cs, c.JSON)
}

// RestoreCmd is `roster-snap restore`.
type RestoreCmd struct {
	Worker  string        `arg:"" help:"The worker."`
	List    bool          `name:"list" help:"List the snapshots instead (same as roster-snap ls)."`
	From    *string       `name:"from" placeholder:"ID" help:"The snapshot to restore: an id or unique prefix (default: the newest, which right after a restore is its pre-restore snapshot: running restore twice undoes it)."`
	Channel *string       `name:"channel" placeholder:"CHAN" help:"Restore only this channel's store."`
	DryRun  bool          `name:"dry-run" help:"Print the change list the restore would make; change nothing."`
	Force   bool          `name:"force" help:"Restore even while a box of the worker is live (it keeps the old tree until it ends)."`
	Wait    time.Duration `name:"wait" default:"60s" placeholder:"DUR" help:"Wait at most this long for the store lock, then exit 11."`
	JSON    bool          `name:"json" help:"JSON output (with --dry-run: one object per change)."`
}

type restoreJSON struct {
	Worker     string   `json:"worker"`
	From       string   `json:"from"`
	PreRestore string   `json:"pre_restore"`
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
	h, w, err := worker(g, c.Worker)
	if err != nil {
		return err
	}
	opt, err := options(h, env, c.Wait)
	if err != nil {
		return err
	}
	var done func()
	if !c.DryRun {
		opt.Progress, done = progress(env, "restore "+c.Worker, -1)
	} else {
		done = func() {}
	}
	r, err := snap.Restore(env.Ctx, w, snap.RestoreOptions{Options: opt, From: from, Channel: channel, DryRun: c.DryRun, Force: c.Force})
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
			Changes: len(r.Changes), Trashed: nonNil(r.Trashed)})
	}
	undo := fmt.Sprintf("roster-snap restore %s --from %s", c.Worker, r.PreRestore)
	if channel != "" {
		undo += " --channel " + strconv.Quote(channel)
	}
	fmt.Fprintf(env.Stderr, "roster-snap: restored %s from snapshot %s; undo with `%s`\n", c.Worker, r.From, undo)
	fmt.Fprintln(env.Stdout, r.PreRestore)
	return nil
}

// SweepCmd is `roster-snap sweep`.
type SweepCmd struct {
	Workers []string      `arg:"" optional:"" name:"worker" help:"Workers to sweep (default: every worker)."`
	Wait    time.Duration `name:"wait" default:"60s" placeholder:"DUR" help:"Wait at most this long for each store lock; a busy store is skipped (exit 11 at the end)."`
	JSON    bool          `name:"json" help:"One JSON object per worker (JSON Lines)."`
}

func (c *SweepCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	for _, n := range c.Workers {
		if err := home.ValidWorker(n); err != nil {
			return err
		}
	}
	opt, err := options(h, env, c.Wait)
	if err != nil {
		return err
	}
	results, err := snap.Sweep(env.Ctx, h, c.Workers, opt)
	var first error
	for _, r := range results {
		if r.Err != nil {
			msg := r.Err.Error()
			if !strings.Contains(msg, fmt.Sprintf("%q", r.Worker)) && !strings.Contains(msg, "worker "+r.Worker) {
				msg = fmt.Sprintf("worker %s: %s", r.Worker, msg)
			}
			fmt.Fprintf(env.Stderr, "roster-snap: error: %s\n", msg)
			if h := errs.HintOf(r.Err); h != "" {
				fmt.Fprintf(env.Stderr, "roster-snap: hint: %s\n", h)
			}
			if first == nil {
				first = r.Err
			}
			if c.JSON {
				cli.JSONLine(env.Stdout, takeJSON{Worker: r.Worker, Pruned: []string{}, Error: r.Err.Error()})
			}
			continue
		}
		if c.JSON {
			cli.JSONLine(env.Stdout, takeJSON{Worker: r.Worker, ID: r.Result.ID, Prev: r.Result.Prev,
				Unchanged: r.Result.Unchanged, Disabled: r.Result.Disabled, Changes: len(r.Result.Changes), Pruned: nonNil(r.Result.Pruned)})
		} else if r.Result.ID != "" {
			fmt.Fprintf(env.Stdout, "%s %s\n", r.Worker, r.Result.ID)
		}
	}
	if len(results) > 0 && results[0].Result != nil && results[0].Result.Disabled {
		env.Warn("snapshots are off (store.snapshots = 0 in org.toml): none taken")
	}
	if err != nil {
		return err
	}
	if first != nil {
		return &errs.Exit{Code: cli.Code(first)}
	}
	return nil
}

// PruneCmd is `roster-snap prune`.
type PruneCmd struct {
	Worker string        `arg:"" help:"The worker."`
	Keep   *int          `name:"keep" placeholder:"N" help:"Snapshots to keep (default: store.snapshots from org.toml); the newest is always kept."`
	Wait   time.Duration `name:"wait" default:"60s" placeholder:"DUR" help:"Wait at most this long for the store lock, then exit 11."`
	JSON   bool          `name:"json" help:"One JSON object per pruned snapshot."`
}

func (c *PruneCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, w, err := worker(g, c.Worker)
	if err != nil {
		return err
	}
	opt, err := options(h, env, c.Wait)
	if err != nil {
		return err
	}
	keep := opt.Keep
	if c.Keep != nil {
		if *c.Keep < 0 {
			return errs.New(errs.ErrUsage, fmt.Sprintf("--keep %d: must be 0 or more", *c.Keep))
		}
		keep = *c.Keep
	}
	pruned, err := snap.Prune(env.Ctx, w, keep, opt)
	for _, id := range pruned {
		if c.JSON {
			cli.JSONLine(env.Stdout, map[string]string{"pruned": id})
		} else {
			fmt.Fprintln(env.Stdout, id)
		}
	}
	return err
}
