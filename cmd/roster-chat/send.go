package main

import (
	"fmt"

	"github.com/roster-sh/roster/lib/chat"
	"github.com/roster-sh/roster/lib/cli"
)

// SendCmd is `roster-chat send W CHAN [TEXT | -]`.
type SendCmd struct {
	Worker  string   `arg:"" help:"The worker it is sent as."`
	Channel string   `arg:"" help:"The channel, ACCOUNT:CHAT."`
	Text    []string `arg:"" optional:"" help:"The message; \"-\" (or nothing) reads it from stdin (at most 16 KiB)."`
}

func (c *SendCmd) Run(g *cli.Globals, env *cli.Env) error {
	rec, err := openRecord(g, c.Worker, c.Channel)
	if err != nil {
		return err
	}
	args := c.Text
	if len(args) == 0 {
		args = []string{"-"}
	}
	text, err := readText(args, env)
	if err != nil {
		return err
	}
	_, l, err := rec.Queue(env.Ctx, chat.Reply{Text: text, By: "operator"})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "queued as %d (roster-chat serve sends it; roster-chat log %s %s shows when)\n", l.Seq, c.Worker, c.Channel)
	return nil
}
