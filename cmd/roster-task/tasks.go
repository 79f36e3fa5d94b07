package main

// The task verbs: lib/tms's command line. Each Run method parses its
// arguments, makes one lib/tms call per partition and prints the result.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/suite"
	"github.com/roster-sh/roster/lib/tms"
)

// TaskCmds holds the task verbs (add, relay, ls, show, ...): lib/tms's
// command line. Embedded in CLI.
type TaskCmds struct {
	Add      AddCmd      `cmd:"" help:"File a task for a person (owner standing); prints its id."`
	Relay    RelayCmd    `cmd:"" help:"File a chat message as a relay task (untrusted content); prints its id."`
	Ls       LsCmd       `cmd:"" help:"List pending, claimed and needs-review tasks with their derived eligibility."`
	Show     ShowCmd     `cmd:"" help:"Show one task: a live one, or a finished one from the journal."`
	Cancel   CancelCmd   `cmd:"" help:"Cancel a task (a claimed one: record it canceled, then kill its box)."`
	Requeue  RequeueCmd  `cmd:"" help:"Put a task back to pending, or file a finished one again; prints its id."`
	Template TemplateCmd `cmd:"" help:"Add, list, remove and preview templates."`
	Set      SetCmd      `cmd:"" help:"Replace the worker-editable part of a partition (set_tasks); needs --version N, the version the request was made from."`
	Journal  JournalCmd  `cmd:"" help:"Print a worker's journal, optionally following it."`
	Due      DueCmd      `cmd:"" help:"What a dispatcher would claim now, and why not the rest."`
	Gate     GateCmd     `cmd:"" help:"Resolve operator decisions (gates)."`
	Fsck     FsckCmd     `cmd:"" help:"Check partitions; rebuild tasks.json from the journal."`
}

// readText returns the text of args, or stdin (at most 1 MiB) for "-".
func readText(args []string, stdin io.Reader) (string, error) {
	if len(args) == 1 && args[0] == "-" {
		data, err := io.ReadAll(io.LimitReader(stdin, tms.MaxText+1))
		if err != nil {
			return "", fmt.Errorf("read stdin: %w", err)
		}
		if len(data) > tms.MaxText {
			return "", errs.New(errs.ErrUsage, "text on stdin is more than the 1 MiB limit")
		}
		// One trailing newline is the line's end (echo, a heredoc), not text.
		s := strings.TrimSuffix(string(data), "\n")
		return strings.TrimSuffix(s, "\r"), nil
	}
	return strings.Join(args, " "), nil
}

func openPartition(g *cli.Globals, worker string) (*tms.Partition, error) {
	h, err := g.OpenHome()
	if err != nil {
		return nil, err
	}
	return tms.Open(h, worker, tms.Options{})
}

// AddCmd is `roster-task add`.
type AddCmd struct {
	Worker   string   `arg:"" help:"The worker."`
	Text     []string `arg:"" help:"The task's text; \"-\" reads it from stdin (at most 1 MiB)."`
	At       string   `help:"Not before TIME: RFC 3339, \"YYYY-MM-DD HH:MM\" (host-local) or +DUR; a past time is due now." placeholder:"TIME"`
	After    []string `help:"Only after task ID has completed (repeatable)." placeholder:"ID"`
	Ceiling  string   `help:"Wall-clock limit of its run (default: org.toml [ceilings] filed)." placeholder:"DUR"`
	Standing string   `help:"owner (default) or proactive." enum:"owner,proactive" default:"owner"`
	Channel  *string  `help:"The conversation it belongs to." placeholder:"CHAN"`
	Priority int      `help:"Higher is claimed first within a standing." default:"0"`
}

// checkChannel refuses an empty --channel: a channel is a non-empty string
// (layout.md), and "" would silently mean none.
func checkChannel(ch *string) (string, error) {
	if ch == nil {
		return "", nil
	}
	if _, err := home.EncodeChannel(*ch); err != nil || *ch == "" {
		return "", errs.New(errs.ErrUsage, fmt.Sprintf("--channel %q: a channel is a non-empty string with no NUL byte whose encoded form fits in 255 bytes", *ch))
	}
	return *ch, nil
}

func (c *AddCmd) Run(g *cli.Globals, env *cli.Env) error {
	ch, err := checkChannel(c.Channel)
	if err != nil {
		return err
	}
	p, err := openPartition(g, c.Worker)
	if err != nil {
		return err
	}
	text, err := readText(c.Text, env.Stdin)
	if err != nil {
		return err
	}
	nt := tms.NewTask{Text: text, Standing: c.Standing, After: c.After, Ceiling: c.Ceiling, Channel: ch, Priority: c.Priority}
	if c.At != "" {
		at, err := tms.ParseAt(c.At, p.Now(), time.Local)
		if err != nil {
			return err
		}
		nt.At = &at
	}
	task, err := p.Add(env.Ctx, nt)
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, task.ID)
	return nil
}

// RelayCmd is `roster-task relay`.
type RelayCmd struct {
	Worker   string   `arg:"" help:"The worker."`
	Text     []string `arg:"" optional:"" help:"The message; \"-\" (or nothing) reads it from stdin (at most 1 MiB)."`
	Channel  string   `required:"" help:"The conversation it came from." placeholder:"CHAN"`
	From     string   `help:"Who sent it." placeholder:"WHO"`
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
	task, err := p.Add(env.Ctx, tms.NewTask{Text: text, Kind: tms.KindRelay, Standing: tms.Proactive, Channel: c.Channel, From: c.From, Ceiling: c.Ceiling, Priority: c.Priority})
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, task.ID)
	return nil
}

// workersOf returns [worker] (checked) or every worker of the home.
func workersOf(h home.Home, worker string) ([]string, error) {
	if worker != "" {
		if err := home.ValidWorker(worker); err != nil {
			return nil, err
		}
		return []string{worker}, nil
	}
	return config.ListWorkers(h)
}

// eachWorker runs fn for every named worker; a worker whose spec or
// partition cannot be read is reported on stderr and skipped, the others
// carry on, and the exit status is that of the first failure (14 for an
// unreadable partition). With one named worker its error is returned.
func eachWorker(g *cli.Globals, env *cli.Env, worker string, fn func(p *tms.Partition) error) error {
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	names, err := workersOf(h, worker)
	if err != nil {
		return err
	}
	var first error
	for _, n := range names {
		p, err := tms.Open(h, n, tms.Options{})
		if err == nil {
			err = fn(p)
		}
		if err != nil {
			if worker != "" {
				return err
			}
			cli.Report(env, fmt.Errorf("worker %s skipped: %w", n, err))
			if first == nil {
				first = err
			}
		}
	}
	if first != nil {
		return &errs.Exit{Code: cli.Code(first)}
	}
	return nil
}

func firstLine(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " ..."
	}
	if len(s) > n {
		s = s[:n-3] + "..."
	}
	return s
}

func fmtTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.In(time.Local).Format("2006-01-02 15:04")
}

// taskJSON is a task as --json prints it: its fields plus the worker and
// the derived eligibility.
type taskJSON struct {
	Worker string `json:"worker"`
	tms.Task
	Eligibility string `json:"eligibility,omitempty"`
	Why         string `json:"why,omitempty"`
	Claimable   *bool  `json:"claimable,omitempty"`
	// How a finished task ended (show, from the journal line that
	// finished it): the event, who ended it, the reason (a cancel's
	// --why, a host's note) and the run's evidence.
	EndedBy  string         `json:"ended_by,omitempty"`
	Reason   string         `json:"reason,omitempty"`
	Evidence *runs.Evidence `json:"evidence,omitempty"`
}

// LsCmd is `roster-task ls`.
type LsCmd struct {
	Worker string `arg:"" optional:"" help:"Only this worker (default: every worker)."`
	All    bool   `help:"Also list finished tasks (completed, failed, canceled) from the journal."`
	JSON   bool   `name:"json" help:"Print JSON Lines."`
}

func (c *LsCmd) Run(g *cli.Globals, env *cli.Env) error {
	var rows [][]string
	err := eachWorker(g, env, c.Worker, func(p *tms.Partition) error {
		r, err := p.Due(env.Ctx)
		if err != nil {
			return err
		}
		var finished []tms.Task
		if c.All {
			if finished, err = p.Finished(); err != nil {
				return err
			}
		}
		for _, e := range r.Entries {
			if c.JSON {
				if err := cli.JSONLine(env.Stdout, taskJSON{Worker: p.Name, Task: e.Task, Eligibility: e.Status, Why: e.Why}); err != nil {
					return err
				}
				continue
			}
			rows = append(rows, []string{e.ID, p.Name, e.Task.State, eligibilityText(e.Eligibility), e.Standing, e.Kind, strconv.Itoa(e.Priority), firstLine(e.Text, 60)})
		}
		for _, t := range finished {
			if c.JSON {
				if err := cli.JSONLine(env.Stdout, taskJSON{Worker: p.Name, Task: t}); err != nil {
					return err
				}
				continue
			}
			rows = append(rows, []string{t.ID, p.Name, t.State, fmtTime(t.FinishedAt), t.Standing, t.Kind, strconv.Itoa(t.Priority), firstLine(t.Text, 60)})
		}
		return nil
	})
	if !c.JSON && (err == nil || len(rows) > 0) { // no bare header after a failure
		if terr := cli.Table(env.Stdout, []string{"ID", "WORKER", "STATE", "ELIGIBILITY", "STANDING", "KIND", "PRI", "TEXT"}, rows); terr != nil && err == nil {
			err = terr
		}
	}
	return err
}

func eligibilityText(e tms.Eligibility) string {
	switch e.Status {
	case tms.StateDue:
		return "due"
	case tms.StateLate, tms.StateHeld, tms.StateBlocked, tms.StateWaiting:
		return strings.TrimPrefix(e.Why, "")
	case tms.StateScheduled:
		return e.Why
	case tms.StateClaimed:
		return e.Why
	}
	return e.Why
}

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
	if c.JSON {
		return cli.JSONLine(env.Stdout, out)
	}
	kv := [][2]string{{"id", task.ID}, {"worker", p.Name}, {"state", task.State}}
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
	add("created", fmtTime(&task.CreatedAt))
	add("scheduled", fmtTime(task.ScheduledAt))
	add("finished", fmtTime(task.FinishedAt))
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
	add("slot", fmtTime(task.Slot))
	add("attempts", strconv.Itoa(task.Attempts))
	if task.Claim != nil {
		add("claim", task.Claim.Run+" at "+fmtTime(&task.Claim.At))
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
	for _, e := range kv {
		fmt.Fprintf(env.Stdout, "%-13s %s\n", e[0]+":", e[1])
	}
	fmt.Fprintf(env.Stdout, "\n%s\n", strings.TrimRight(task.Text, "\n"))
	return nil
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

// CancelCmd is `roster-task cancel`.
type CancelCmd struct {
	ID     string `arg:"" help:"A task id or unique prefix."`
	Worker string `help:"Search only this worker." placeholder:"W"`
	Why    string `help:"Why, for the journal." placeholder:"TEXT"`
}

func (c *CancelCmd) Run(g *cli.Globals, env *cli.Env) error {
	p, f, err := findTask(g, env, c.Worker, c.ID, true) // a finished one: 13, not 12
	if err != nil {
		return err
	}
	run, err := p.Cancel(env.Ctx, f.ID, c.Why, tms.ByOwner)
	if err != nil || run == "" {
		return err
	}
	// The task is canceled under the lock already; now end its box. Its
	// supervisor, finding the claim gone, records the run canceled.
	box, ferr := suite.Find("roster-box")
	if ferr != nil {
		env.Warn("task %s canceled; its box (run %s) was not killed: roster-box not found", f.ID, run)
		return nil
	}
	cmd := exec.CommandContext(env.Ctx, box, "--home", p.Home.Dir, "kill", run)
	cmd.Stdout, cmd.Stderr = env.Stderr, env.Stderr
	if err := cmd.Run(); err != nil {
		env.Warn("task %s canceled; roster-box kill %s: %v", f.ID, run, err)
	}
	return nil
}

// RequeueCmd is `roster-task requeue`.
type RequeueCmd struct {
	ID     string `arg:"" help:"A task id or unique prefix."`
	Worker string `help:"Search only this worker." placeholder:"W"`
}

func (c *RequeueCmd) Run(g *cli.Globals, env *cli.Env) error {
	p, f, err := findTask(g, env, c.Worker, c.ID, true)
	if err != nil {
		return err
	}
	task, err := p.RequeueReaping(env.Ctx, f.ID, tms.ByOwner, func(run string) error {
		// A dead supervisor's container may still run: destroy it before
		// the task can be claimed again.
		box, err := suite.Find("roster-box")
		if err != nil {
			return fmt.Errorf("roster-box not found: %v", err)
		}
		cmd := exec.CommandContext(env.Ctx, box, "--home", p.Home.Dir, "reap", run)
		cmd.Stdout, cmd.Stderr = env.Stderr, env.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("roster-box reap %s: %v", run, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, task.ID)
	return nil
}

// SetCmd is `roster-task set`.
type SetCmd struct {
	Worker  string `arg:"" help:"The worker."`
	File    string `arg:"" optional:"" default:"-" help:"The request (the shape of tasks.json's tasks and templates); \"-\" or nothing: stdin."`
	Version *int64 `name:"set-version" hidden:"" help:"--version N: the version the request was made from; stale: exit 13, nothing changes." placeholder:"N"`
}

func (c *SetCmd) Run(g *cli.Globals, env *cli.Env) error {
	// --version is renamed --set-version before parsing (task_set.go), so
	// its absence is checked here, in its own name.
	if c.Version == nil {
		return errs.WithHint(errs.New(errs.ErrUsage, "set needs --version N: the version the request was made from"),
			"read it from the partition's view/schedule.json (\"version\") or `roster-task fsck WORKER`")
	}
	p, err := openPartition(g, c.Worker)
	if err != nil {
		return err
	}
	var data []byte
	if c.File == "-" {
		data, err = io.ReadAll(io.LimitReader(env.Stdin, 16<<20+1))
	} else {
		data, err = os.ReadFile(c.File)
	}
	if err != nil {
		return errs.New(errs.ErrUsage, fmt.Sprintf("read %s: %v", c.File, err))
	}
	in, err := tms.DecodeSet(data)
	if err != nil {
		return err
	}
	// --version is the version the writer read; a "version" in the
	// request (a copied schedule.json) is ignored.
	v := *c.Version
	in.Version = &v
	res, err := p.SetTasks(env.Ctx, in, tms.ByOwner)
	if err != nil {
		return err
	}
	for _, ch := range res.Changed {
		fmt.Fprintf(env.Stderr, "roster-task: %s %s\n", ch.Entry, ch.What)
	}
	fmt.Fprintln(env.Stdout, res.Version)
	return nil
}

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
		_, err := fmt.Fprintf(env.Stdout, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", l.Seq, v, l.At.In(time.Local).Format("2006-01-02 15:04:05"), l.Event, what, l.By, strings.Join(extra, " "))
		return err
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

// DueCmd is `roster-task due`.
type DueCmd struct {
	Worker string `arg:"" optional:"" help:"Only this worker (default: every worker)."`
	JSON   bool   `name:"json" help:"Print JSON Lines."`
}

func (c *DueCmd) Run(g *cli.Globals, env *cli.Env) error {
	var rows [][]string
	err := eachWorker(g, env, c.Worker, func(p *tms.Partition) error {
		r, err := p.Due(env.Ctx)
		if err != nil {
			return err
		}
		n := 0
		for _, e := range r.Entries {
			if e.Task.State != tms.Pending {
				continue
			}
			ok := e.Status == tms.StateDue
			if c.JSON {
				b := ok
				if err := cli.JSONLine(env.Stdout, taskJSON{Worker: p.Name, Task: e.Task, Eligibility: e.Status, Why: e.Why, Claimable: &b}); err != nil {
					return err
				}
				continue
			}
			order := ""
			if ok {
				n++
				order = strconv.Itoa(n)
			}
			why := e.Why
			if ok {
				why = "claimable now"
			}
			rows = append(rows, []string{p.Name, order, e.ID, e.Status, why, e.Standing, firstLine(e.Text, 50)})
		}
		return nil
	})
	if !c.JSON && (err == nil || len(rows) > 0) { // no bare header after a failure
		if terr := cli.Table(env.Stdout, []string{"WORKER", "ORDER", "ID", "ELIGIBILITY", "WHY", "STANDING", "TEXT"}, rows); terr != nil && err == nil {
			err = terr
		}
	}
	return err
}

// GateCmd groups the gate verbs.
type GateCmd struct {
	Resolve GateResolveCmd `cmd:"" help:"Approve or deny a gate; the last one of a needs-review task completes it."`
}

// GateResolveCmd is `roster-task gate resolve`.
type GateResolveCmd struct {
	ID       string `arg:"" help:"A task id or unique prefix."`
	Gate     string `arg:"" help:"The gate's id (g1, g2, ...)."`
	Decision string `arg:"" enum:"approve,deny" help:"approve or deny."`
	Worker   string `help:"Search only this worker." placeholder:"W"`
	Why      string `help:"The reason, carried to the continuation." placeholder:"TEXT"`
}

func (c *GateResolveCmd) Run(g *cli.Globals, env *cli.Env) error {
	p, f, err := findTask(g, env, c.Worker, c.ID, true) // a finished one: 13, not 12
	if err != nil {
		return err
	}
	cont, err := p.ResolveGate(env.Ctx, f.ID, c.Gate, c.Decision, c.Why)
	if err != nil {
		return err
	}
	if cont != "" {
		fmt.Fprintln(env.Stdout, cont)
	}
	return nil
}

// FsckCmd is `roster-task fsck`.
type FsckCmd struct {
	Worker  string `arg:"" optional:"" help:"Only this worker (default: every worker)."`
	Rebuild bool   `help:"Rebuild tasks.json (and the view) from the journal's records."`
}

func (c *FsckCmd) Run(g *cli.Globals, env *cli.Env) error {
	bad, journalBad := false, false
	err := eachWorker(g, env, c.Worker, func(p *tms.Partition) error {
		if c.Rebuild {
			v, err := p.Rebuild(env.Ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stderr, "roster-task: %s: tasks.json rebuilt from the journal at version %d\n", p.Name, v)
		}
		r, err := p.Fsck(env.Ctx)
		if err != nil {
			return err
		}
		for _, n := range r.Notes {
			fmt.Fprintf(env.Stderr, "roster-task: %s: note: %s\n", p.Name, n)
		}
		if r.Clean() {
			fmt.Fprintf(env.Stdout, "%s\tok\tversion %d, %d journal lines\n", p.Name, r.Version, r.Lines)
			return nil
		}
		bad = true
		for _, pr := range r.Problems {
			fmt.Fprintf(env.Stdout, "%s\tproblem\t%s\n", p.Name, pr)
		}
		if r.BadLine > 0 {
			// The journal is the source of truth: a line of it that does
			// not parse is refused data (14), and no rebuild can help.
			return errs.WithHint(errs.New(errs.ErrRefused, fmt.Sprintf("%s: line %d does not parse", p.W.Journal(), r.BadLine)),
				fmt.Sprintf("the journal is the source of truth and nothing repairs it automatically: fix or truncate line %d by hand (keep a copy first); `fsck --rebuild` cannot help", r.BadLine))
		}
		journalBad = journalBad || r.JournalProblem
		return nil
	})
	if err != nil {
		return err
	}
	if journalBad {
		return errs.WithHint(fmt.Errorf("fsck found problems in a journal"), "the journal is the source of truth and nothing repairs it automatically: fix the lines named above by hand (keep a copy first)")
	}
	if bad {
		return errs.WithHint(fmt.Errorf("fsck found problems"), "`roster-task fsck --rebuild WORKER` rebuilds tasks.json from the journal")
	}
	return nil
}
