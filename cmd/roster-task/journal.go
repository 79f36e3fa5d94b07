package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/tms"
)

// JournalCmd is `roster-task journal`.
type JournalCmd struct {
	Worker string `arg:"" help:"The worker."`
	Since  int64  `help:"Only lines after seq N (to resume a follow)." placeholder:"SEQ" default:"0"`
	Follow bool   `short:"f" help:"Keep printing lines as they are appended (tail -f), until interrupted."`
	JSON   bool   `name:"json" help:"Print the journal's lines as they are (JSON Lines)."`
}

func (c *JournalCmd) Run(g *cli.Globals, env *cli.Env) error {
	if c.Since < 0 {
		return errs.New(errs.ErrUsage, fmt.Sprintf("--since %d: must be 0 or more (a journal seq)", c.Since))
	}
	p, err := openPartition(g, c.Worker)
	if err != nil {
		return err
	}
	print := func(l tms.Line) error {
		if c.JSON {
			return cli.JSONLine(env.Stdout, l)
		}
		return printLine(env.Stdout, &l, p.Zone())
	}
	if !c.Follow {
		lines, err := p.Journal(c.Since)
		if err != nil {
			return err
		}
		for _, l := range lines {
			if err := print(l); err != nil {
				return err
			}
		}
		return nil
	}
	return following(env.Ctx, env.Stdout, func(ctx context.Context) error {
		return p.Follow(ctx, c.Since, func(l tms.Line) error {
			if err := print(l); err != nil {
				return err
			}
			if f, ok := env.Stdout.(interface{ Sync() error }); ok {
				f.Sync()
			}
			return nil
		})
	})
}

// printLine prints a journal line as a tab-separated row: seq, version,
// time, event, task or template, by, and the rest as key=value.
func printLine(w io.Writer, l *tms.Line, zone *time.Location) error {
	v := ""
	if l.Version > 0 {
		v = strconv.FormatInt(l.Version, 10)
	}
	what := l.Task
	if what == "" {
		what = l.Template
	}
	var extra []string
	for _, s := range []struct{ k, v string }{{"template", l.Template}, {"run", l.Run}, {"gate", l.Gate}, {"decision", l.Decision}, {"from", l.From}, {"reason", l.Reason}} {
		if s.v != "" && s.v != what {
			extra = append(extra, s.k+"="+s.v)
		}
	}
	if l.Missed > 0 {
		extra = append(extra, fmt.Sprintf("missed=%d", l.Missed))
	}
	if l.Action != nil {
		extra = append(extra, "action="+l.Action.Kind, "outcome="+strconv.Quote(l.Action.Outcome))
	}
	if l.Evidence != nil {
		extra = append(extra, fmt.Sprintf("exit=%d report=%s", l.Evidence.Exit, l.Evidence.Report))
		if l.Evidence.Note != "" {
			extra = append(extra, "note="+strconv.Quote(l.Evidence.Note))
		}
	}
	for _, ch := range l.Changed {
		extra = append(extra, ch.Entry+":"+strings.ReplaceAll(ch.What, " ", ""))
	}
	// Each field escaped (Printable), so a worker's text cannot add a
	// field or a line.
	_, err := fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", l.Seq, v, l.At.In(zone).Format("2006-01-02 15:04:05"),
		cli.Printable(l.Event), cli.Printable(what), cli.Printable(l.By), cli.Printable(strings.Join(extra, " ")))
	return err
}
