package main

import (
	"fmt"
	"time"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/runs"
)

// LsCmd lists runs newest first.
type LsCmd struct {
	Worker   []string `short:"w" placeholder:"W" help:"Only runs of this worker (repeatable)."`
	Task     string   `placeholder:"ID" help:"Only runs of this task (an id or a unique prefix)."`
	Since    string   `placeholder:"TIME" help:"Only runs started since TIME (RFC 3339, \"YYYY-MM-DD HH:MM\", or an age like 36h or 7d)."`
	Limit    int      `placeholder:"N" help:"At most N runs (the newest)."`
	Attested string   `placeholder:"A" enum:",completed,failed,needs-review,canceled,none" default:"" help:"Only runs attested A: completed, failed, needs-review, canceled, or none (ad hoc, or not ended)."`
	Failed   bool     `help:"Only runs attested failed (--attested failed)."`
	Template string   `placeholder:"ID" help:"Only runs of tasks the template ID fired (with --worker W, or any worker's template of that id)."`
	Pushed   string   `placeholder:"REPO" help:"Only runs whose git push landed (or waits in a gate) in REPO; \"*\" for any repo."`
	JSON     bool     `name:"json" help:"One JSON object per run (JSON Lines)."`
}

// lsRow is a run as ls --json prints it: the run.json record, plus whether
// its box is live now.
type lsRow struct {
	*runs.Record
	Live  bool   `json:"live"`
	Error string `json:"error,omitempty"`
}

func (c *LsCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	zone, err := hostZone(h)
	if err != nil {
		return err
	}
	if c.Limit < 0 {
		return errs.New(errs.ErrUsage, fmt.Sprintf("--limit %d: give 1 or more (0: all)", c.Limit))
	}
	if c.Failed {
		if c.Attested != "" && c.Attested != "failed" {
			return errs.New(errs.ErrUsage, "--failed and --attested "+c.Attested+": give one")
		}
		c.Attested = "failed"
	}
	f := runs.Filter{Task: c.Task, Limit: c.Limit, Attested: c.Attested, Template: c.Template, Pushed: c.Pushed}
	for _, w := range c.Worker {
		if _, err := h.ExistingWorker(w); err != nil {
			return err
		}
	}
	if len(c.Worker) > 0 {
		f.Workers = c.Worker
	}
	if c.Since != "" {
		if f.Since, err = runs.ParseSince(c.Since, time.Now(), zone); err != nil {
			return err
		}
	}
	list, err := runs.List(h, f)
	if err != nil {
		return err
	}
	if c.JSON {
		for _, e := range list {
			row := lsRow{Record: e.Record, Live: e.Live()}
			if row.Record == nil {
				row.Record = &runs.Record{Format: 1, ID: e.ID, Worker: e.Worker}
			}
			if e.Err != nil {
				row.Error = e.Err.Error()
			}
			if err := cli.JSONLine(env.Stdout, row); err != nil {
				return err
			}
		}
		return nil
	}
	var rows [][]string
	for _, e := range list {
		if e.Err != nil {
			env.Warn("%v", e.Err)
		}
		rows = append(rows, lsCells(e, zone))
	}
	return cli.Table(env.Stdout, []string{"RUN", "WORKER", "TASK", "KIND", "STARTED", "WALL", "COST", "ENDED", "REPORT", "ATTESTED"}, rows)
}

func lsCells(e runs.Entry, zone *time.Location) []string {
	started := e.Started().In(zone).Format("2006-01-02 15:04:05")
	r := e.Record
	switch {
	case e.Err != nil:
		return []string{e.ID, e.Worker, "-", "-", started, "-", "-", "unreadable", "-", "-"}
	case r == nil:
		return []string{e.ID, e.Worker, "-", "-", started, "-", "-", state(e), "-", "-"}
	}
	wall := "-"
	if r.Cost.WallSeconds > 0 {
		wall = seconds(r.Cost.WallSeconds)
	} else if r.Ended == "" && e.Live() {
		wall = seconds(time.Since(r.StartedAt).Seconds())
	}
	return []string{e.ID, e.Worker, dash(r.Task), dash(r.Kind), started, wall, lsCost(r.Cost), state(e), dash(r.Report.Status), dash(r.Attested)}
}

// lsCost is a run's model use in a cell: "-" for none, else its tokens
// (input + output, cache reads and writes apart) and, when every call was
// priced, the spend: "12.4k tok $0.031"; "~" marks an estimate.
func lsCost(c runs.Cost) string {
	if c.ModelCalls == 0 {
		return "-"
	}
	s := compact(c.InputTokens+c.OutputTokens) + " tok"
	if c.Estimated {
		s = "~" + s
	}
	if c.USD != nil {
		s += " " + usd(*c.USD)
	}
	return s
}

// compact is n as 950, 12.4k or 3.1M.
func compact(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1000000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1e6)
}

// state is how a run stands: its `ended`, or live / starting / lost.
func state(e runs.Entry) string {
	if e.Record != nil && e.Record.Ended != "" {
		return e.Record.Ended
	}
	if e.Live() {
		return "live"
	}
	if _, err := runs.ReadBoxInfo(e.Dir); err != nil && !runs.Finished(e.Dir) {
		return "starting"
	}
	return "lost"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func seconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", s)
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
