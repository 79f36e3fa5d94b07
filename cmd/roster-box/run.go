package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/box"
	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
)

// RunCmd is `roster-box run`.
type RunCmd struct {
	Worker  string         `arg:"" help:"The worker whose box to run."`
	Task    string         `name:"task" placeholder:"ID" help:"The claimed task this run serves (with --run; what the dispatcher runs)."`
	RunID   string         `name:"run" placeholder:"RUN" help:"The run id the task is claimed for (with --task)."`
	Ceiling *time.Duration `name:"ceiling" placeholder:"DUR" help:"Ad hoc: the run's wall-clock limit (default: org.toml [ceilings] adhoc)."`
	Channel *string        `name:"channel" placeholder:"CHAN" help:"Ad hoc: mount this channel's store at ~/channel/store."`
	Clean   bool           `name:"clean" help:"Ad hoc: no channel store and a briefing with no task or schedule."`
	Command []string       `arg:"" optional:"" passthrough:"" help:"Ad hoc: the command to run instead of the spec's (after --)."`
}

func (c *RunCmd) Run(g *cli.Globals, env *cli.Env) error {
	ctx := env.Ctx
	if os.Getenv("ROSTER_BOX_TRACE") != "" {
		t := &box.Trace{}
		t.Mark("roster-box started")
		ctx = box.WithTrace(ctx, t)
		defer printTrace(env.Stderr, t)
	}
	if g := os.Getenv("ROSTER_BOX_GRACE"); g != "" {
		if d, err := time.ParseDuration(g); err == nil && d >= 0 {
			box.Grace = d
		}
	}
	if len(c.Command) > 0 && c.Command[0] == "--" {
		c.Command = c.Command[1:]
	}
	req := box.Request{Worker: c.Worker, Task: c.Task, Run: c.RunID, Ceiling: c.Ceiling, Channel: c.Channel, Clean: c.Clean, Command: c.Command}
	if err := c.check(req); err != nil {
		return err
	}
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	req.Home = h
	// The spec is read once for the whole run (Prepare takes it from
	// req): a spec changed while the run starts is the next run's.
	if req.Spec, err = config.LoadWorker(h, c.Worker); err != nil {
		return err
	}
	// Bounded from the start (host_memory): everything this supervisor does
	// for the worker, reading its partition included, costs the worker.
	cg, err := box.EnterHostCgroup(h, req.Spec)
	if err != nil {
		return err
	}
	// It exits inside: a move out would wait a cgroup migration (8 to 12
	// ms under v1) after the run is recorded. The cgroup it leaves empty
	// is the next supervisor's, or `roster-box reap`'s to remove.
	defer afterRun(cg)
	box.TraceMark(ctx, "host cgroup")
	// The join waited a grace period of the kernel's for its migration;
	// held open, the box's own migration into its cgroups waits none.
	hold := cg.HoldOpen()
	defer hold()
	sup, err := box.Prepare(ctx, req)
	if err != nil {
		return err
	}
	sup.SetUp = hold
	dispatched := req.Dispatched()

	// SIGTERM (roster-box kill) and SIGHUP end the box; an attached
	// terminal's ^C reaches the box's own processes, not us.
	sigs := []os.Signal{unix.SIGTERM, unix.SIGHUP}
	if dispatched {
		sigs = append(sigs, unix.SIGINT)
	} else {
		signal.Ignore(unix.SIGINT, unix.SIGQUIT)
		sup.Attached, sup.Stdin, sup.Stdout, sup.Stderr = true, env.Stdin, env.Stdout, env.Stderr
		if f, ok := env.Stdin.(*os.File); ok && box.IsTerminal(f) {
			sup.Terminal = f // the box gets a pty of its own
		}
	}
	if err := createRunDir(sup, dispatched); err != nil {
		return err
	}
	box.TraceMark(ctx, "run folder")
	sctx, stop := signal.NotifyContext(ctx, sigs...)
	defer stop()

	run := sup.Spec.Run
	if !dispatched {
		for _, m := range sup.Warnings {
			env.Warn("%s", m) // a dispatched run's are the dispatcher's to log
		}
		fmt.Fprintf(env.Stderr, "roster-box: run %s\n", run)
	}
	rec, exit, err := sup.Supervise(sctx)
	if err != nil {
		return err
	}
	return reportRun(env, rec, exit, run, dispatched)
}

// createRunDir makes the run folder, exclusively, last, so a refused
// start leaves nothing behind: an existing run is never overwritten
// (exit 13); an ad-hoc id that clashes is replaced by a new one.
func createRunDir(sup *box.Supervision, dispatched bool) error {
	for i := 0; ; i++ {
		err := box.CreateRunDir(sup.Spec.RunDir, dispatched)
		if err == nil {
			return nil
		}
		if dispatched || !errors.Is(err, errs.ErrConflict) || i >= 10 {
			return err
		}
		sup.Rename(box.NewRunID(time.Now()))
	}
}

// reportRun says how run went on stderr (a failed on_failure hook; for
// an ad-hoc run, a ceiling hit) and returns an ad-hoc run's exit status
// as the command's. A dispatched run's record says how its box did: the
// supervisor did its job.
func reportRun(env *cli.Env, rec *runs.Record, exit box.Exit, run string, dispatched bool) error {
	if n := rec.Notified; n != nil {
		msg := fmt.Sprintf("roster-box: run %s: on_failure hook exited %d after %.1fs", run, n.Exit, n.Seconds)
		if n.Error != "" {
			msg += ": " + n.Error
		}
		fmt.Fprintln(env.Stderr, msg)
	}
	if dispatched {
		return nil // the supervisor did its job; the record says how the box did
	}
	if rec.Ended == "ceiling" {
		fmt.Fprintf(env.Stderr, "roster-box: run %s hit its ceiling (%s)\n", run, rec.Ceiling)
	}
	if exit.Code != 0 {
		return &errs.Exit{Code: exit.Code}
	}
	return nil
}

// afterRun is what the supervisor does with its host cgroup once the run
// is over: nothing, as the process exits. Tests, which run the command in
// their own process and live on, move back out.
var afterRun = func(*box.HostCgroup) {}

// check refuses flags that cannot be honoured together (exit 2).
func (c *RunCmd) check(r box.Request) error {
	dispatched := r.Dispatched()
	if dispatched && (c.Task == "" || c.RunID == "") {
		return errs.New(errs.ErrUsage, "--task and --run go together")
	}
	if dispatched && (c.Ceiling != nil || c.Channel != nil || c.Clean || len(c.Command) > 0) {
		return errs.New(errs.ErrUsage, "--ceiling, --channel, --clean and a command are for ad-hoc runs only")
	}
	if c.Clean && c.Channel != nil {
		return errs.New(errs.ErrUsage, "--clean and --channel exclude each other (a clean run gets no channel store)")
	}
	if c.Channel != nil {
		if _, err := home.EncodeChannel(*c.Channel); err != nil || *c.Channel == "" {
			return errs.New(errs.ErrUsage, fmt.Sprintf("--channel %q: a channel is a non-empty name", *c.Channel))
		}
	}
	if c.Ceiling != nil && *c.Ceiling <= 0 {
		return errs.New(errs.ErrUsage, fmt.Sprintf("--ceiling %s: a ceiling is a positive duration", *c.Ceiling))
	}
	if dispatched {
		return box.CheckRunID(c.RunID, time.Now())
	}
	return nil
}

// printTrace writes ROSTER_BOX_TRACE's table: each step, the time since
// the one before, and since roster-box's main package was initialised.
func printTrace(w io.Writer, t *box.Trace) {
	t.Mark("done")
	prev := started
	for _, m := range t.Marks() {
		fmt.Fprintf(w, "roster-box: trace: %-28s %7.2f ms %8.2f ms\n", m.Step, ms(m.At.Sub(prev)), ms(m.At.Sub(started)))
		prev = m.At
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
