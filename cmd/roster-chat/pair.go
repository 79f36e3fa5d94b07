package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/roster-sh/roster/lib/chat"
	"github.com/roster-sh/roster/lib/cli"
)

// PairCmd is `roster-chat pair ls | approve CODE | deny CODE`.
type PairCmd struct {
	Ls      PairLsCmd      `cmd:"" default:"withargs" help:"The pairing codes sent to strangers, newest last."`
	Approve PairApproveCmd `cmd:"" help:"Let the code's sender reach the worker (added to its allow for that chat)."`
	Deny    PairDenyCmd    `cmd:"" help:"Refuse the code: its sender gets no new code for a day."`
}

// PairLsCmd is `roster-chat pair ls [--json]`.
type PairLsCmd struct {
	JSON bool `name:"json" help:"One JSON object per code (JSON Lines)."`
}

func (c *PairLsCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	all, err := chat.Pairings(h)
	if err != nil {
		return err
	}
	if c.JSON {
		for _, p := range all {
			b, _ := json.Marshal(p)
			fmt.Fprintf(env.Stdout, "%s\n", b)
		}
		return nil
	}
	if len(all) == 0 {
		fmt.Fprintln(env.Stdout, "no pairing codes (a stranger's DM gets one, at most once a day)")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CODE\tWORKER\tCHANNEL\tFROM\tSENT\tSTATE")
	for _, p := range all {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Code, p.Worker, cli.Printable(p.Channel), cli.Printable(p.From), p.At.Local().Format("2006-01-02 15:04"), p.State)
	}
	return tw.Flush()
}

// PairApproveCmd is `roster-chat pair approve CODE`.
type PairApproveCmd struct {
	Code string `arg:"" help:"The code the stranger was sent (XXXX-XXXX)."`
}

func (c *PairApproveCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	p, err := chat.Approve(env.Ctx, h, c.Code)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "%s may now reach %s on %s (proactive standing; their next message is relayed)\n", cli.Printable(p.From), p.Worker, cli.Printable(p.Channel))
	return nil
}

// PairDenyCmd is `roster-chat pair deny CODE`.
type PairDenyCmd struct {
	Code string `arg:"" help:"The code to refuse."`
}

func (c *PairDenyCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	p, err := chat.Deny(h, c.Code)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "denied %s for %s (no new code for a day)\n", cli.Printable(p.From), p.Worker)
	return nil
}
