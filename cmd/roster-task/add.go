package main

import (
	"fmt"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/tms"
)

// AddCmd is `roster-task add`.
type AddCmd struct {
	Worker   string   `arg:"" help:"The worker."`
	Text     []string `arg:"" help:"The task's text; \"-\" reads it from stdin (at most 64 KiB)."`
	At       string   `help:"Not before TIME: RFC 3339, \"YYYY-MM-DD HH:MM\" (host-local) or +DUR; a past time is due now." placeholder:"TIME"`
	After    []string `help:"Only after task ID has completed (repeatable)." placeholder:"ID"`
	Ceiling  string   `help:"Wall-clock limit of its run (default: org.toml [ceilings] filed)." placeholder:"DUR"`
	Standing string   `help:"owner (default) or proactive." enum:"owner,proactive" default:"owner"`
	Channel  *string  `help:"The conversation it belongs to." placeholder:"CHAN"`
	Priority int      `help:"Higher is claimed first within a standing." default:"0"`
	Retries  int      `help:"Retry a run attested failed (a ceiling, a refused credential included) up to N times under the same id, after org.toml [dispatch] retry_backoff." placeholder:"N" default:"0"`
}

func (c *AddCmd) Run(g *cli.Globals, env *cli.Env) error {
	ch, err := checkChannel(c.Channel)
	if err != nil {
		return err
	}
	p, err := openPartition(g, c.Worker)
	if err != nil {
		return err
	}
	text, err := readText(c.Text, env.Stdin)
	if err != nil {
		return err
	}
	nt := tms.NewTask{Text: text, Standing: c.Standing, After: c.After, Ceiling: c.Ceiling, Channel: ch, Priority: c.Priority, Retries: c.Retries}
	if c.At != "" {
		at, err := tms.ParseAt(c.At, p.Now(), p.Zone())
		if err != nil {
			return err
		}
		nt.At = &at
	}
	task, err := p.Add(env.Ctx, nt)
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, task.ID)
	return nil
}
