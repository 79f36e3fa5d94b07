package main

import (
	"fmt"

	"github.com/roster-sh/roster/lib/chat"
	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/tms"
)

// RelayCmd is `roster-task relay`.
type RelayCmd struct {
	Worker   string   `arg:"" help:"The worker."`
	Text     []string `arg:"" optional:"" help:"The message; \"-\" (or nothing) reads it from stdin (at most 64 KiB)."`
	Channel  string   `required:"" help:"The conversation it came from." placeholder:"CHAN"`
	From     string   `help:"Who sent it." placeholder:"WHO"`
	Msg      string   `name:"msg" help:"The network's id of the message: filing the same (channel, id) again prints the first task's id." placeholder:"NET_ID"`
	Ceiling  string   `help:"Wall-clock limit of its run (default: org.toml [ceilings] relay)." placeholder:"DUR"`
	Priority int      `help:"Higher is claimed first within a standing." default:"0"`
}

func (c *RelayCmd) Run(g *cli.Globals, env *cli.Env) error {
	if _, err := checkChannel(&c.Channel); err != nil {
		return err
	}
	p, err := openPartition(g, c.Worker)
	if err != nil {
		return err
	}
	args := c.Text
	if len(args) == 0 {
		args = []string{"-"}
	}
	text, err := readText(args, env.Stdin)
	if err != nil {
		return err
	}
	if c.Msg != "" {
		if id := filedBefore(p, c.Channel, c.Msg); id != "" {
			fmt.Fprintln(env.Stdout, id)
			return nil
		}
	}
	changeProcs()
	task, err := p.Add(env.Ctx, tms.NewTask{Text: text, Kind: tms.KindRelay, Standing: tms.Proactive, Channel: c.Channel, From: c.From, Msg: c.Msg, Ceiling: c.Ceiling, Priority: c.Priority})
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, task.ID)
	return nil
}

// filedBefore is the task the conversation record says message msg of
// channel was filed as (roster-chat logs it), "" if none: a relay that
// has finished is no longer among the live tasks Add looks at.
func filedBefore(p *tms.Partition, channel, msg string) string {
	rec, err := chat.Open(p.W, channel)
	if err != nil {
		return ""
	}
	lines, err := rec.Read(0)
	if err != nil {
		return ""
	}
	for _, m := range chat.Fold(lines) {
		if m.Dir == "in" && m.NetID == msg && m.Task != "" {
			return m.Task
		}
	}
	return ""
}
