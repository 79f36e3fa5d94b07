package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/roster-sh/roster/lib/chat"
	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/tms"
)

// LsCmd is `roster-chat ls [--worker W] [--json]`.
type LsCmd struct {
	Worker string `name:"worker" placeholder:"W" help:"Only this worker's conversations."`
	JSON   bool   `name:"json" help:"One JSON object per conversation (JSON Lines)."`
}

// convRow is one conversation as ls shows it.
type convRow struct {
	Worker   string     `json:"worker"`
	Channel  string     `json:"channel"`
	Messages int        `json:"messages"`
	Last     *chat.Line `json:"last,omitempty"`
	Queued   int        `json:"queued"`         // replies waiting in the outbox
	Failed   int        `json:"failed"`         // replies given up on
	Live     string     `json:"live,omitempty"` // the run of its live session, while its box is alive
	Error    string     `json:"error,omitempty"`
}

func (c *LsCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	workers := []string{c.Worker}
	if c.Worker == "" {
		if workers, err = config.ListWorkers(h); err != nil {
			return err
		}
	} else if err := home.ValidWorker(c.Worker); err != nil {
		return err
	}
	var rows []convRow
	for _, w := range workers {
		recs, err := chat.List(h.Worker(w))
		if err != nil {
			return errs.New(errs.ErrRefused, err.Error())
		}
		for _, rec := range recs {
			rows = append(rows, row(h.Worker(w), rec))
		}
	}
	if c.JSON {
		for _, r := range rows {
			b, _ := json.Marshal(r)
			fmt.Fprintf(env.Stdout, "%s\n", b)
		}
		return nil
	}
	if len(rows) == 0 {
		fmt.Fprintln(env.Stdout, "no conversations yet (roster-chat serve logs each message it takes; see docs/channels.md)")
		return nil
	}
	return printRows(env.Stdout, rows)
}

func row(w home.Worker, rec *chat.Record) convRow {
	r := convRow{Worker: rec.Worker, Channel: rec.Channel}
	lines, err := rec.Read(0)
	if err != nil {
		r.Error = err.Error()
	}
	msgs := chat.Fold(lines)
	r.Messages = len(msgs)
	for _, m := range msgs {
		if m.State == chat.Failed {
			r.Failed++
		}
	}
	if len(msgs) > 0 {
		last := msgs[len(msgs)-1].Line
		r.Last = &last
	}
	pend, err := rec.Pending()
	if err != nil && r.Error == "" {
		r.Error = err.Error()
	}
	r.Queued = len(pend)
	if m, err := rec.Live(); err == nil && m != nil {
		if gone, _ := tms.BoxGone(w.Run(m.Run), m.Started, time.Now()); !gone {
			r.Live = m.Run
		}
	}
	return r
}

func printRows(w io.Writer, rows []convRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKER\tCHANNEL\tMSGS\tQUEUED\tFAILED\tLIVE\tLAST")
	for _, r := range rows {
		last := "-"
		if r.Last != nil {
			dir := "<-"
			if r.Last.Dir == "out" {
				dir = "->"
			}
			text := strings.Join(strings.Fields(r.Last.Text), " ")
			if len(text) > 40 {
				text = text[:40] + "…"
			}
			last = fmt.Sprintf("%s %s %s %s", r.Last.At.Local().Format(time.DateTime), dir, r.Last.State, cli.Printable(text))
		}
		if r.Error != "" {
			last = "unreadable: " + r.Error
		}
		live := r.Live
		if live == "" {
			live = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\n", r.Worker, cli.Printable(r.Channel), r.Messages, r.Queued, r.Failed, live, last)
	}
	return tw.Flush()
}
