package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/tms"
)

// JournalCmd is `roster-task journal`.
type JournalCmd struct {
	Worker string `arg:"" optional:"" help:"The worker (default: every worker's journal, merged in time order, each line led by its worker, as journalctl -f)."`
	Since  int64  `help:"Only lines after seq N (to resume a follow)." placeholder:"SEQ" default:"0"`
	Follow bool   `short:"f" help:"Keep printing lines as they are appended (tail -f), until interrupted."`
	JSON   bool   `name:"json" help:"Print the journal's lines as they are (JSON Lines)."`
}

func (c *JournalCmd) Run(g *cli.Globals, env *cli.Env) error {
	if c.Since < 0 {
		return errs.New(errs.ErrUsage, fmt.Sprintf("--since %d: must be 0 or more (a journal seq)", c.Since))
	}
	if c.Worker == "" {
		return c.runAll(g, env)
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
	for _, r := range l.Push {
		id := r.New
		if len(id) > 7 {
			id = id[:7]
		}
		extra = append(extra, "push="+r.Repo+":"+strings.TrimPrefix(r.Ref, "refs/heads/")+"@"+id+":"+r.Outcome)
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

// workerLine is a merged journal's line in JSON: the line and its worker.
type workerLine struct {
	Worker string `json:"worker"`
	tms.Line
}

// runAll prints every worker's journal merged in time order (a line's
// "at"; a tie keeps worker order), each line led by its worker; with
// --follow it then prints each worker's new lines as they are appended,
// one at a time. Workers added after it started are not followed.
func (c *JournalCmd) runAll(g *cli.Globals, env *cli.Env) error {
	if c.Since != 0 {
		return errs.WithHint(errs.New(errs.ErrUsage, "--since is a worker's journal seq: give the worker"), "roster-task journal WORKER --since SEQ")
	}
	type wline struct {
		worker string
		line   tms.Line
	}
	var all []wline
	var parts []*tms.Partition
	last := map[string]int64{}
	err := eachWorker(g, env, "", func(p *tms.Partition) error {
		lines, err := p.Journal(0)
		if err != nil {
			return err
		}
		parts = append(parts, p)
		for _, l := range lines {
			all = append(all, wline{p.Name, l})
			last[p.Name] = l.Seq
		}
		return nil
	})
	if err != nil && (!c.Follow || len(parts) == 0) {
		return err
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].line.At.Before(all[j].line.At) })
	var zone *time.Location
	if len(parts) > 0 {
		zone = parts[0].Zone()
	}
	var mu sync.Mutex
	print := func(worker string, l tms.Line) error {
		mu.Lock()
		defer mu.Unlock()
		var err error
		if c.JSON {
			err = cli.JSONLine(env.Stdout, workerLine{Worker: worker, Line: l})
		} else {
			if _, err = fmt.Fprintf(env.Stdout, "%s\t", worker); err == nil {
				err = printLine(env.Stdout, &l, zone)
			}
		}
		if f, ok := env.Stdout.(interface{ Sync() error }); ok && c.Follow {
			f.Sync()
		}
		return err
	}
	for _, wl := range all {
		if err := print(wl.worker, wl.line); err != nil {
			return err
		}
	}
	if !c.Follow {
		return err
	}
	return following(env.Ctx, env.Stdout, func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		errc := make(chan error, len(parts))
		for _, p := range parts {
			go func(p *tms.Partition) {
				errc <- p.Follow(ctx, last[p.Name], func(l tms.Line) error { return print(p.Name, l) })
			}(p)
		}
		var first error
		for range parts {
			if err := <-errc; err != nil && first == nil {
				first = err
				cancel() // one worker's failure ends the follow
			}
		}
		return first
	})
}
