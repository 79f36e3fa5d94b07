package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

// ShowCmd is `roster-task show`.
type ShowCmd struct {
	ID     string `arg:"" help:"A task id or unique prefix."`
	Worker string `help:"Search only this worker." placeholder:"W"`
	JSON   bool   `name:"json" help:"Print one JSON object."`
}

// findTask resolves an id for a verb, reporting skipped workers.
func findTask(g *cli.Globals, env *cli.Env, worker, id string, finished bool) (*tms.Partition, tms.Found, error) {
	h, err := g.OpenHome()
	if err != nil {
		return nil, tms.Found{}, err
	}
	f, skipped, err := tms.FindTask(env.Ctx, h, worker, id, finished)
	for i, s := range skipped {
		if i == 0 && err != nil && errors.Is(err, s) {
			continue // err itself reports it
		}
		cli.Report(env, fmt.Errorf("skipped %w", s))
	}
	if err != nil {
		return nil, f, err
	}
	p, err := tms.Open(h, f.Worker, tms.Options{})
	return p, f, err
}

func (c *ShowCmd) Run(g *cli.Globals, env *cli.Env) error {
	p, f, err := findTask(g, env, c.Worker, c.ID, true)
	if err != nil {
		return err
	}
	task, end, err := p.ShowEnded(env.Ctx, f.ID)
	if err != nil {
		return err
	}
	out := taskJSON{Worker: p.Name, Task: task}
	if end != nil {
		out.EndedBy, out.Reason, out.Evidence = end.By, end.Reason, end.Evidence
	}
	if task.State == tms.Pending || task.State == tms.Claimed || task.State == tms.NeedsReview {
		if r, err := p.Due(env.Ctx); err == nil {
			for _, e := range r.Entries {
				if e.ID == task.ID {
					out.Eligibility, out.Why = e.Status, e.Why
				}
			}
		}
	}
	if out.History, err = p.Attempts(task.ID); err != nil {
		return err
	}
	if c.JSON {
		return cli.JSONLine(env.Stdout, out)
	}
	printTask(env.Stdout, &out, p.Zone())
	return nil
}

// printTask prints a task as show does: one "key: value" line for each
// field set, then its text.
func printTask(w io.Writer, out *taskJSON, zone *time.Location) {
	task := &out.Task
	kv := [][2]string{{"id", task.ID}, {"worker", out.Worker}, {"state", task.State}}
	add := func(k, v string) {
		if v != "" {
			kv = append(kv, [2]string{k, v})
		}
	}
	if out.Eligibility != "" {
		add("eligibility", eligibilityText(tms.Eligibility{Status: out.Eligibility, Why: out.Why}))
	}
	add("kind", task.Kind)
	add("standing", task.Standing)
	add("by", task.By)
	add("priority", strconv.Itoa(task.Priority))
	add("created", fmtTime(&task.CreatedAt, zone))
	add("scheduled", fmtTime(task.ScheduledAt, zone))
	add("finished", fmtTime(task.FinishedAt, zone))
	add("ended by", out.EndedBy)
	add("reason", out.Reason)
	if ev := out.Evidence; ev != nil {
		add("evidence", evidenceText(ev))
	}
	add("depends on", strings.Join(task.DependsOn, ", "))
	add("ceiling", task.Ceiling)
	add("channel", task.Channel)
	add("from", task.From)
	add("template", task.Template)
	add("slot", fmtTime(task.Slot, zone))
	if task.Attempts > 0 { // boxes lost and reclaimed (not retries: below)
		add("boxes lost", fmt.Sprintf("%d of %d", task.Attempts, tms.MaxReclaims))
	}
	if task.Retries > 0 {
		add("retries", fmt.Sprintf("%d of %d used", task.Retried, task.Retries))
	}
	if task.Claim != nil {
		add("claim", task.Claim.Run+" at "+fmtTime(&task.Claim.At, zone))
	}
	add("last run", task.LastRun)
	add("continues", task.Continues)
	add("refiled from", task.RefiledFrom)
	for _, gt := range task.Gates {
		s := gt.State
		if gt.Wake {
			s += ", wake"
		}
		if gt.Why != "" {
			s += ": " + gt.Why
		}
		add("gate "+gt.ID, fmt.Sprintf("%s (%s)", gt.What, s))
	}
	for i, a := range out.History {
		v := a.Event + " " + fmtTime(&a.At, zone)
		if a.Run != "" {
			v += " run " + a.Run
		}
		if a.Reason != "" {
			v += ": " + a.Reason
		}
		add(fmt.Sprintf("history %d", i+1), v)
	}
	for _, e := range kv {
		fmt.Fprintf(w, "%-13s %s\n", cli.Printable(e[0])+":", cli.Printable(e[1]))
	}
	fmt.Fprintf(w, "\n%s\n", cli.PrintableText(strings.TrimRight(task.Text, "\n")))
}

// evidenceText is a run's evidence on one line: exit or signal, ceiling,
// the report, the reported reason, refused actions and the host's note.
func evidenceText(ev *runs.Evidence) string {
	parts := []string{"exit " + strconv.Itoa(ev.Exit)}
	if ev.Signal != "" {
		parts[0] = "signal " + ev.Signal
	}
	if ev.Ceiling {
		parts = append(parts, "ceiling hit")
	}
	if ev.Report != "" {
		parts = append(parts, "report "+ev.Report)
	}
	if ev.Reason != "" {
		parts = append(parts, "reason "+strconv.Quote(ev.Reason))
	}
	if ev.RefusedActions > 0 {
		parts = append(parts, fmt.Sprintf("%d refused actions", ev.RefusedActions))
	}
	if ev.Note != "" {
		parts = append(parts, "note "+strconv.Quote(ev.Note))
	}
	return strings.Join(parts, ", ")
}
