package main

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/snap"
)

// TakeCmd is `roster-snap take`.
type TakeCmd struct {
	Worker string        `arg:"" help:"The worker."`
	RunID  string        `name:"run" placeholder:"RUN" help:"Also write the change list to runs/RUN/store-changes.txt."`
	Wait   time.Duration `name:"wait" default:"60s" placeholder:"DUR" help:"Wait at most this long for the store lock, then exit 11 (store busy)."`
	JSON   bool          `name:"json" help:"Print the outcome as one JSON object."`
}

// takeProcs gives a take one P more than the cores. A take is system
// calls on a few goroutines (the walk's stats, the pool's links and
// copies, many fsyncs at once), and a goroutine in a system call keeps its
// P until the runtime's monitor takes it back (20 µs to 10 ms later), so
// with one P per core a core sat idle behind each blocked fsync: a 1% take
// of 100,000 files on 2 cores (load 1-3) took 1.58-1.93 s with 2 Ps,
// 1.38-1.79 s with 3 (medians 1.67 and 1.45 over 7 interleaved pairs,
// the same CPU).
// GOMAXPROCS in the environment is left as set.
func takeProcs() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
	}
}

type takeJSON struct {
	Worker    string   `json:"worker"`
	ID        string   `json:"id"`
	Prev      string   `json:"prev"`
	Unchanged bool     `json:"unchanged"`
	Disabled  bool     `json:"disabled"`
	NoStore   bool     `json:"no_store,omitempty"`
	Changes   int      `json:"changes"`
	Pruned    []string `json:"pruned"`
	Error     string   `json:"error,omitempty"`
}

func (c *TakeCmd) Run(g *cli.Globals, env *cli.Env) error {
	takeProcs()
	h, w, err := worker(g, c.Worker)
	if err != nil {
		return err
	}
	runDir := ""
	if c.RunID != "" {
		if !home.IsRunID(c.RunID) {
			// A unique prefix names a run (docs/layout.md), as everywhere; what
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
	done := progress(env, &opt, "snapshot")
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
