package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/runs"
)

// ShowCmd prints one run's record.
type ShowCmd struct {
	ID   string `arg:"" name:"RUN" help:"The run (any unique prefix of its id)."`
	JSON bool   `name:"json" help:"The record as one JSON object (run.json, plus \"live\")."`
}

func (c *ShowCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	e, err := runs.Lookup(h, c.ID)
	if err != nil {
		return err
	}
	r := e.Record
	if r == nil {
		r = &runs.Record{Format: 1, ID: e.ID, Worker: e.Worker}
	}
	if c.JSON {
		return cli.JSONLine(env.Stdout, lsRow{Record: r, Live: e.Live()})
	}
	zone, err := hostZone(h)
	if err != nil {
		return err
	}
	return showBlock(env.Stdout, e, r, zone)
}

func showBlock(w io.Writer, e runs.Entry, r *runs.Record, zone *time.Location) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	// Every value may hold worker-supplied text (report, agent's words,
	// hosts it asked for): one line each, escaped for the terminal.
	line := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, cli.Printable(strings.ReplaceAll(v, "\n", " "))) }
	line("run", e.ID)
	line("worker", e.Worker)
	if r.Task != "" {
		line("task", fmt.Sprintf("%s (%s, %s)", r.Task, dash(r.Kind), dash(r.Standing)))
	} else {
		line("task", "none ("+dash(r.Kind)+" run)")
	}
	if r.Channel != "" {
		line("channel", r.Channel)
	}
	line("started", when(e.Started(), zone))
	switch st := state(e); {
	case r.Ended != "" && r.EndedAt != nil:
		line("ended", fmt.Sprintf("%s at %s", howEnded(r), when(*r.EndedAt, zone)))
	case r.Ended != "":
		line("ended", howEnded(r))
	default:
		line("ended", "not yet ("+st+")")
	}
	line("attested", dash(r.Attested))
	if ev := r.Evidence; ev != nil {
		line("evidence", ev.Summary())
	}
	rep := r.Report.Status
	if rep == "" {
		rep = "none"
	}
	if r.Report.Text != "" {
		rep += ": " + r.Report.Text
	}
	line("report", rep)
	line("ceiling", dash(r.Ceiling))
	line("cost", fmt.Sprintf("wall %s, cpu %s, memory peak %s",
		seconds(r.Cost.WallSeconds), seconds(r.Cost.CPUSeconds), cli.IEC(r.Cost.MemoryPeakBytes)))
	if r.Cost.ModelCalls > 0 || r.Gateway != nil {
		line("model", modelCost(r.Cost))
	}
	if g := r.Gateway; g != nil {
		line("gateway", gatewaySummary(g))
	}
	if a := r.Agent; a != nil {
		agentLines(line, a)
	}
	if gr := r.Git; gr != nil {
		for i, p := range gr.Pushes {
			k := ""
			if i == 0 {
				k = "git"
			}
			line(k, pushLine(p))
		}
		if k := gr.Knowledge; k != nil {
			line("knowledge", knowledgeLine(k))
		}
	}
	if len(r.Actions) == 0 {
		line("actions", "none")
	}
	for i, a := range r.Actions {
		k := ""
		if i == 0 {
			k = "actions"
		}
		s := fmt.Sprintf("%d. %s: %s", a.N, a.Kind, a.Outcome)
		if a.Task != "" {
			s += " (task " + a.Task + ")"
		}
		if a.Gate != "" {
			s += " (gate " + a.Gate + ")"
		}
		line(k, s)
	}
	line("snapshot", dash(r.Snapshot))
	line("folder", e.Dir)
	return tw.Flush()
}

// modelCost is the gateway's measure of a run's model use.
func modelCost(c runs.Cost) string {
	s := fmt.Sprintf("%s, tokens %d in, %d out, %d cache read, %d cache write",
		plural(c.ModelCalls, "call"), c.InputTokens, c.OutputTokens, c.CacheReadTokens, c.CacheWriteTokens)
	switch {
	case c.USD != nil:
		s += ", " + usd(*c.USD)
	case c.ModelCalls > 0:
		s += ", not priced"
	}
	if c.Estimated {
		s += " (some estimated: an answer told no final usage)"
	}
	return s
}

// pushLine is one ref of a run's pushes: "pushed app roster/dobby/fix
// 3f2a1c0", "refused app main (ref_protected)".
func pushLine(p runs.GitRef) string {
	ref := strings.TrimPrefix(p.Ref, "refs/heads/")
	id := p.New
	if strings.Trim(id, "0") == "" {
		id = "(deleted)"
	} else if len(id) > 7 {
		id = id[:7]
	}
	s := p.Outcome + " " + p.Repo + " " + ref + " " + id
	if p.Refusal != "" {
		s += " (" + p.Refusal + ")"
	}
	return s
}

// knowledgeLine is "write, landed 9e1d2b4 (2 commits)", "read" or
// "write, nothing landed".
func knowledgeLine(k *runs.GitKnowledge) string {
	if k.Landed == "" {
		if k.Access == "read" {
			return "read"
		}
		return k.Access + ", nothing landed"
	}
	id := k.Landed
	if len(id) > 7 {
		id = id[:7]
	}
	return fmt.Sprintf("%s, landed %s (%s)", k.Access, id, plural(k.Commits, "commit"))
}

func gatewaySummary(g *runs.GatewaySummary) string {
	s := fmt.Sprintf("%s, %d refused", plural(g.Requests, "request"), g.Refused)
	kinds := make([]string, 0, len(g.Refusals))
	for k := range g.Refusals {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for i, k := range kinds {
		kinds[i] = fmt.Sprintf("%s %d", k, g.Refusals[k])
	}
	if len(kinds) > 0 {
		s += " (" + strings.Join(kinds, ", ") + ")"
	}
	if l := g.LastRefusal; l != nil {
		s += "; last: " + l.Kind + " " + dash(l.Target)
	}
	return s
}

// agentExcerpt is how much of the agent's final text show prints.
const agentExcerpt = 200

// agentLines prints what the agent's own stream said; its cost is its
// claim, labelled so, beside the gateway's measure that counts.
func agentLines(line func(k, v string), a *runs.AgentRecord) {
	s := dash(a.Name)
	if a.Version != "" {
		s += " " + a.Version
	}
	if a.Interactive {
		s += ", interactive (a terminal session: turns not counted)"
	} else {
		s += ", " + plural(a.Turns, "turn")
	}
	if a.StopReason != "" {
		s += ", stop " + a.StopReason
	}
	line("agent", s)
	if a.FinalText != "" {
		text := strings.Join(strings.Fields(a.FinalText), " ")
		if rs := []rune(text); len(rs) > agentExcerpt {
			text = string(rs[:agentExcerpt]) + "…"
		}
		line("agent said", text)
	}
	if a.CostUSD != nil {
		line("agent claim", usd(*a.CostUSD)+" (the agent's own figure; the gateway's is the one that counts)")
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// usd prints dollars: cents from a dollar up, else four decimals.
func usd(v float64) string {
	if v >= 1 || v == 0 {
		return fmt.Sprintf("$%.2f", v)
	}
	return fmt.Sprintf("$%.4f", v)
}

func howEnded(r *runs.Record) string {
	s := r.Ended
	switch {
	case r.Signal != "":
		s += ", signal " + r.Signal
	case r.ExitCode != nil:
		s += fmt.Sprintf(", exit %d", *r.ExitCode)
	}
	return s
}

func when(t time.Time, zone *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(zone).Format("2006-01-02 15:04:05 MST")
}
