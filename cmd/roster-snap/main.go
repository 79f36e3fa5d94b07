// Command roster-snap takes, lists, compares and restores snapshots of a
// worker's store and channel stores (docs/store.md; docs/tools.md, "roster-snap").
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
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/snap"
)

// CLI is the grammar; each verb lives in its own file.
type CLI struct {
	cli.Globals

	Take    TakeCmd    `cmd:"" help:"Snapshot a worker's store and channel stores if anything changed; prints the new id."`
	Ls      LsCmd      `cmd:"" help:"List a worker's snapshots, newest first, with their apparent size and the disk space they share and own."`
	Diff    DiffCmd    `cmd:"" help:"Itemized changes between two snapshots (default: the newest snapshot vs the live store)."`
	Changes ChangesCmd `cmd:"" help:"A snapshot's change list (what changed since the snapshot before it); with --restore, what the restore that took a pre-restore snapshot changed."`
	Restore RestoreCmd `cmd:"" help:"Restore a worker's store (and channel stores) from a snapshot; prints the pre-restore snapshot id (the undo)."`
	Sweep   SweepCmd   `cmd:"" help:"Take a snapshot of every worker whose store changed (daily)."`
	Prune   PruneCmd   `cmd:"" help:"Keep only the newest N snapshots of a worker."`
	Pin     PinCmd     `cmd:"" help:"Keep a snapshot out of the rotation: it is never pruned until unpinned; prints its id."`
	Unpin   UnpinCmd   `cmd:"" help:"Give a pinned snapshot back to the rotation; prints its id."`
}

// started is when the program began, as near as Go can say: a trace's
// total counts from it.
var started = time.Now()

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
	// (docs/layout.md): exit 14 naming it, as sweep does. (No spec at all is
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
	opt := snap.Options{Keep: org.Storage.Snapshots, Daily: org.Storage.Daily, Zone: org.Zone(),
		UndoDays: org.Storage.UndoDays, MinFree: org.Storage.MinFree, Wait: wait}
	if os.Getenv("ROSTER_SNAP_TRACE") != "" {
		opt.Trace = tracer(env.Stderr)
	}
	return opt, nil
}

// tracer prints each step a take or restore passes (ROSTER_SNAP_TRACE):
// its name, the milliseconds since the step before and since the program
// started, as roster-box's trace does.
func tracer(w io.Writer) func(string) {
	var mu sync.Mutex
	prev := started
	return func(step string) {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		fmt.Fprintf(w, "roster-snap: trace: %-30s %9.2f ms %9.2f ms\n", step, ms(now.Sub(prev)), ms(now.Sub(started)))
		prev = now
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// progress sets opt up to draw progress on stderr when it is a terminal:
// a count with its rate, and, once a walk's total is known (snap.Phase: a
// restore's exact count, a take's estimate from the previous snapshot),
// the total, a percentage and the time left. It returns the function that
// clears it.
func progress(env *cli.Env, opt *snap.Options, what string) func() {
	f, ok := env.Stderr.(*os.File)
	if !ok {
		return func() {}
	}
	if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err != nil {
		return func() {}
	}
	bar := progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetItsString("entries"),
		progressbar.OptionShowIts(),
		progressbar.OptionSetPredictTime(true),
	)
	var mu sync.Mutex
	n, max := 0, -1
	opt.Phase = func(p snap.Phase) {
		mu.Lock()
		defer mu.Unlock()
		n, max = 0, p.Total
		bar.Reset()
		bar.ChangeMax(p.Total)
		bar.Describe(what + ": " + p.What + " " + p.Worker)
		_ = bar.RenderBlank() // the total at once, however quick the walk
	}
	opt.Progress = func(k int) {
		mu.Lock()
		defer mu.Unlock()
		n += k
		if max >= 0 && n > max { // an estimate outgrown: the store grew
			max = n + n/10
			bar.ChangeMax(max)
		}
		bar.Add(k)
	}
	return func() { bar.Finish(); bar.Clear() }
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

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
