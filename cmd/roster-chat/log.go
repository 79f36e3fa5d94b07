package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/chat"
	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// LogCmd is `roster-chat log W CHAN [--since SEQ] [--follow] [--json]`.
type LogCmd struct {
	Worker  string `arg:"" help:"The worker."`
	Channel string `arg:"" help:"The channel, ACCOUNT:CHAT (roster-chat ls lists them)."`
	Since   int64  `name:"since" placeholder:"SEQ" help:"Only lines after SEQ (replay from there)."`
	Follow  bool   `name:"follow" short:"f" help:"Keep printing lines as they are logged (until interrupted)."`
	JSON    bool   `name:"json" help:"The log's own lines (JSON Lines), as written."`
}

func (c *LogCmd) Run(g *cli.Globals, env *cli.Env) error {
	rec, err := openRecord(g, c.Worker, c.Channel)
	if err != nil {
		return err
	}
	since := c.Since
	for {
		lines, err := rec.Read(since)
		if err != nil {
			return errs.New(errs.ErrRefused, err.Error())
		}
		for _, l := range lines {
			if c.JSON {
				b, _ := json.Marshal(l)
				fmt.Fprintf(env.Stdout, "%s\n", b)
			} else {
				printLine(env.Stdout, l)
			}
			since = l.Seq
		}
		if !c.Follow {
			return nil
		}
		select {
		case <-env.Ctx.Done():
			return nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func openRecord(g *cli.Globals, worker, channel string) (*chat.Record, error) {
	h, err := g.OpenHome()
	if err != nil {
		return nil, err
	}
	if err := home.ValidWorker(worker); err != nil {
		return nil, err
	}
	w := h.Worker(worker)
	if err := w.MustExist(); err != nil {
		return nil, err
	}
	if !strings.Contains(channel, ":") {
		return nil, errs.New(errs.ErrUsage, fmt.Sprintf("channel %q: a channel is ACCOUNT:CHAT (e.g. team:alice@example.org, irc:#ops)", channel))
	}
	return chat.Open(w, channel)
}

// printLine is one line for people: seq, time, direction, who, state, text.
func printLine(w io.Writer, l chat.Line) {
	at := l.At.Local().Format("2006-01-02 15:04:05")
	dir := "<-"
	if l.Dir == "out" {
		dir = "->"
	}
	if l.Of != 0 || (l.Dir == "out" && l.Text == "" && l.Ref != "") {
		what := l.State
		switch {
		case l.Task != "":
			what += " " + l.Task
		case l.Run != "" && l.State == chat.Answered:
			what += " by " + l.Run
		case l.NetID != "":
			what += " " + l.NetID
		}
		if l.Note != "" {
			what += " (" + l.Note + ")"
		}
		ref := fmt.Sprintf("#%d", l.Of)
		if l.Of == 0 {
			ref = l.Ref
		}
		fmt.Fprintf(w, "%6d %s %s %s: %s\n", l.Seq, at, dir, ref, what)
		return
	}
	who := l.From
	if l.Dir == "out" {
		who = "worker"
		if l.By != "" && l.By != "run" {
			who += " (" + l.By + ")"
		}
	} else if !l.Verified {
		who += " (unverified)"
	} else if l.Standing == "owner" {
		who += " (owner)"
	}
	text := l.Text
	if l.State == chat.Dropped {
		text = "[not kept: " + l.Note + "]"
	}
	text = strings.ReplaceAll(cli.PrintableText(text), "\n", "\n"+strings.Repeat(" ", 28))
	fmt.Fprintf(w, "%6d %s %s %s [%s] %s\n", l.Seq, at, dir, who, l.State, text)
}
