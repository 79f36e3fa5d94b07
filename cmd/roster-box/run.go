package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/box"
	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/suite"
	"github.com/roster-sh/roster/lib/tms"
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
	if g := os.Getenv("ROSTER_BOX_GRACE"); g != "" {
		if d, err := time.ParseDuration(g); err == nil && d >= 0 {
			box.Grace = d
		}
	}
	if len(c.Command) > 0 && c.Command[0] == "--" {
		c.Command = c.Command[1:]
	}
	dispatched := c.Task != "" || c.RunID != ""
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
		if err := box.CheckRunID(c.RunID, time.Now()); err != nil {
			return err
		}
	}
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	spec, err := config.LoadWorker(h, c.Worker)
	if err != nil {
		return err
	}
	org, err := config.LoadOrg(h)
	if err != nil {
		return err
	}
	part, err := tms.Open(h, c.Worker, tms.Options{Org: org, Worker: spec})
	if err != nil {
		return err
	}
	ctx := env.Ctx
	w := h.Worker(c.Worker)

	sup := &box.Supervision{Part: part, Idle: spec.Idle}
	var task *tms.Task
	run, channel, kind := c.RunID, "", "adhoc"
	if c.Channel != nil {
		channel = *c.Channel
	}
	if dispatched {
		t, err := part.Get(ctx, c.Task)
		if errors.Is(err, errs.ErrNotFound) {
			t, err = part.Show(ctx, c.Task) // finished meanwhile: recorded canceled below
		}
		if err != nil {
			return err
		}
		task = &t
		channel, kind = t.Channel, t.Kind
		sup.Ceiling = part.CeilingOf(task)
	} else {
		run = newRunID(time.Now())
		sup.Ceiling = org.Ceiling("adhoc")
		if c.Ceiling != nil {
			sup.Ceiling = *c.Ceiling
		}
	}
	s := &box.Spec{
		Worker: c.Worker, Run: run, Channel: channel,
		UID: spec.UID, Command: spec.Command, Rootfs: spec.Rootfs, Network: spec.Network,
		Memory: spec.Memory, Pids: spec.Pids, CPUs: spec.CPUs,
		Store: w.Store(), Locks: w.Locks(), View: w.View(), Runs: w.Runs(), RunDir: w.Run(run),
		Tools: map[string]string{},
	}
	if task != nil {
		s.Task = task.ID
	}
	if len(c.Command) > 0 {
		s.Command = c.Command
	}
	passEnv := spec.PassEnv
	if !dispatched {
		passEnv = append(passEnv, "TERM") // ad-hoc runs have a terminal
	}
	for _, name := range passEnv {
		if v, ok := os.LookupEnv(name); ok {
			s.Env = append(s.Env, name+"="+v)
		}
	}
	for _, cn := range spec.Connections {
		s.Connections = append(s.Connections, box.Connection{Name: cn.Name, Path: cn.Path, At: cn.At, Mode: cn.Mode})
	}
	if channel != "" {
		if s.ChannelStore, err = channelStore(w, channel, spec.UID); err != nil {
			return err
		}
	}
	for _, t := range []string{"roster-task", "roster-lock"} {
		if p, err := suite.Find(t); err == nil {
			s.Tools[t] = p
		}
	}
	sup.Spec, sup.Task, sup.Kind = s, task, kind
	sup.Briefing = box.BriefingInput{Worker: c.Worker, Role: spec.Role, Run: run, Task: task, Channel: channel, Clean: c.Clean, Now: time.Now()}
	if !c.Clean {
		if f, err := part.Read(ctx); err == nil {
			sup.Briefing.Schedule = f
		}
	}
	if snap, err := suite.Find("roster-snap"); err == nil {
		sup.Snapshot = func(ctx context.Context) string { return snapshot(ctx, snap, h, c.Worker, run) }
	}

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
	// The run folder is made exclusively, last, so a refused start leaves
	// nothing behind: an existing run is never overwritten (exit 13); an
	// ad-hoc id that clashes is replaced by a new one.
	for i := 0; ; i++ {
		err := box.CreateRunDir(w.Run(run), dispatched)
		if err == nil {
			break
		}
		if dispatched || !errors.Is(err, errs.ErrConflict) || i >= 10 {
			return err
		}
		run = newRunID(time.Now())
		s.Run, s.RunDir, sup.Briefing.Run = run, w.Run(run), run
	}
	sctx, stop := signal.NotifyContext(ctx, sigs...)
	defer stop()

	if !dispatched {
		fmt.Fprintf(env.Stderr, "roster-box: run %s\n", run)
	}
	rec, exit, err := sup.Supervise(sctx)
	if err != nil {
		return err
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

// newRunID makes an ad-hoc run's id (a variable: tests make it clash).
var newRunID = home.NewRunID

// channelStore returns the channel's store, creating it owned by the box
// user (chown through the new descriptor, never a path).
func channelStore(w home.Worker, channel string, uid int) (string, error) {
	dir, err := w.ChannelStore(channel)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(w.ChannelStores(), 0o700); err != nil {
		return "", err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if os.IsExist(err) {
			return dir, nil
		}
		return "", err
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	return dir, unix.Fchown(fd, uid, uid)
}

// snapshot runs `roster-snap take W --run RUN` and says what run.json
// records: the new id, "unchanged", "store busy", "snapshots unavailable".
func snapshot(ctx context.Context, prog string, h home.Home, worker, run string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, "take", worker, "--run", run, "--home", h.Dir)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		if id := strings.TrimSpace(out.String()); id != "" {
			return id
		}
		return "unchanged"
	case errors.As(err, &ee) && ee.ExitCode() == cli.ExitBusy:
		return "store busy"
	}
	msg := strings.TrimSpace(stderr.String())
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		msg = msg[i+1:]
	}
	if msg == "" {
		msg = err.Error()
	}
	return "failed: " + msg
}
