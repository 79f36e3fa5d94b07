package main

import (
	"fmt"
	"io"
	"os"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/tms"
)

// SetCmd is `roster-task set`.
type SetCmd struct {
	Worker  string `arg:"" help:"The worker."`
	File    string `arg:"" optional:"" default:"-" help:"The request (the shape of tasks.json's tasks and templates); \"-\" or nothing: stdin."`
	Version *int64 `name:"set-version" hidden:"" help:"--version N: the version the request was made from; stale: exit 13, nothing changes." placeholder:"N"`
}

func (c *SetCmd) Run(g *cli.Globals, env *cli.Env) error {
	// --version is renamed --set-version before parsing (fixArgs), so
	// its absence is checked here, in its own name.
	if c.Version == nil {
		return errs.WithHint(errs.New(errs.ErrUsage, "set needs --version N: the version the request was made from"),
			"read it from the partition's view/schedule.json (\"version\") or `roster-task fsck WORKER`")
	}
	p, err := openPartition(g, c.Worker)
	if err != nil {
		return err
	}
	var r io.Reader = env.Stdin
	if c.File != "-" {
		f, err := os.Open(c.File)
		if err != nil {
			return errs.New(errs.ErrUsage, fmt.Sprintf("read %s: %v", c.File, err))
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, tms.MaxSetBytes+1))
	if err != nil {
		return errs.New(errs.ErrUsage, fmt.Sprintf("read %s: %v", c.File, err))
	}
	if len(data) > tms.MaxSetBytes {
		return errs.New(errs.ErrUsage, fmt.Sprintf("%s: more than the %d MiB limit of one set", c.File, tms.MaxSetBytes>>20))
	}
	in, err := tms.DecodeSet(data)
	if err != nil {
		return err
	}
	// --version is the version the writer read; a "version" in the
	// request (a copied schedule.json) is ignored.
	v := *c.Version
	in.Version = &v
	res, err := p.SetTasks(env.Ctx, in, tms.ByOwner)
	if err != nil {
		return err
	}
	for _, ch := range res.Changed {
		fmt.Fprintf(env.Stderr, "roster-task: %s %s\n", cli.Printable(ch.Entry), cli.Printable(ch.What))
	}
	fmt.Fprintln(env.Stdout, res.Version)
	return nil
}
