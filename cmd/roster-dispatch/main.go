// Command roster-dispatch is the dispatch loop (docs/tools.md, "roster-dispatch";
// `roster server start`): one per home, in the foreground, logging to
// stderr. It claims due tasks and starts a detached `roster-box run` for
// each; SIGTERM or SIGINT stops it (exit 0) and leaves the boxes running
// for the next dispatcher to adopt.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/dispatch"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// CLI is the grammar: one command, the loop.
type CLI struct {
	cli.Globals

	Cap       *int           `placeholder:"N" help:"Boxes at once, all workers together (default: org.toml [dispatch] cap)."`
	Poll      *time.Duration `placeholder:"DUR" help:"Longest sleep between ticks (default: org.toml [dispatch] poll, 2s)."`
	Worker    []string       `short:"w" placeholder:"NAME" help:"Serve only this worker (repeatable; default: every worker)."`
	Once      bool           `help:"Reclaim, run one tick, then exit."`
	UntilIdle bool           `help:"Exit when nothing is claimable now, no box is live and every process it started has exited."`
	NoWatch   bool           `help:"Do not watch the partitions for changes; wake only on timers and --poll (for comparison)."`
	LogJSON   bool           `name:"log-json" help:"Log JSON lines instead of text."`
	NoChat    bool           `name:"no-chat" help:"Do not start roster-chat serve beside the loop (it starts when org.toml has a [chat.NAME] account)."`
}

func (c *CLI) Run(g *cli.Globals, env *cli.Env) error {
	for _, w := range c.Worker {
		if err := home.ValidWorker(w); err != nil {
			return err
		}
	}
	capN, poll := 0, time.Duration(0) // 0: org.toml's
	if c.Cap != nil {
		if capN = *c.Cap; capN < 1 {
			return errs.New(errs.ErrUsage, fmt.Sprintf("--cap %d: want a number of boxes, 1 or more", capN))
		}
	}
	if c.Poll != nil {
		if poll = *c.Poll; poll <= 0 {
			return errs.New(errs.ErrUsage, fmt.Sprintf("--poll %s: want a positive duration", poll))
		}
	}
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	for _, w := range c.Worker {
		if _, err := h.ExistingWorker(w); err != nil {
			return err
		}
	}
	org, err := config.LoadOrg(h)
	if err != nil {
		return err
	}
	for _, w := range org.Warnings {
		env.Warn("%s", w)
	}
	lk, err := dispatch.Lock(h)
	if err != nil {
		return err
	}
	defer lk.Unlock()

	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	var handler slog.Handler = slog.NewTextHandler(env.Stderr, opts)
	if c.LogJSON {
		handler = slog.NewJSONHandler(env.Stderr, opts)
	}
	ctx, stop := signal.NotifyContext(env.Ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	d := dispatch.New(dispatch.Options{Home: h, Cap: capN, Poll: poll, Workers: c.Worker,
		Once: c.Once, UntilIdle: c.UntilIdle, NoWatch: c.NoWatch, Log: slog.New(handler)})
	if stop := cpuProfile(env); stop != nil {
		defer stop()
	}
	if len(org.Chat.Accounts) > 0 && !c.NoChat && !c.Once && !c.UntilIdle {
		chatDone := make(chan struct{})
		go func() { defer close(chatDone); serveChat(ctx, h, env.Stderr, slog.New(handler)) }()
		defer func() { stop(); <-chatDone }()
	}
	return d.Run(ctx)
}

// cpuProfile writes a CPU profile of the whole run to the file
// ROSTER_CPUPROFILE names, if set (for finding where the time goes, as
// bench/scale.sh's operator would: go tool pprof bin/roster-dispatch FILE).
func cpuProfile(env *cli.Env) func() {
	path := os.Getenv("ROSTER_CPUPROFILE")
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		env.Warn("ROSTER_CPUPROFILE: %v", err)
		return nil
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		env.Warn("ROSTER_CPUPROFILE: %v", err)
		f.Close()
		return nil
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

func main() {
	os.Exit(cli.MainEnv(&cli.Env{Name: "roster-dispatch", Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Ctx: context.Background()}, &CLI{}, os.Args[1:]))
}
