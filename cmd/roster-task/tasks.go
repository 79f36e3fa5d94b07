package main

// The task verbs: lib/tms's command line. Each Run method parses its
// arguments, makes one lib/tms call per partition and prints the result.

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
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
	Edit     EditCmd     `cmd:"" help:"Change a pending task in place: text, time, dependencies, ceiling, priority."`
	Template TemplateCmd `cmd:"" help:"Add, list, remove and preview templates."`
	Set      SetCmd      `cmd:"" help:"Replace the worker-editable part of a partition (set_tasks); needs --version N, the version the request was made from."`
	Journal  JournalCmd  `cmd:"" help:"Print a worker's journal, optionally following it."`
	Due      DueCmd      `cmd:"" help:"What a dispatcher would claim now, and why not the rest."`
	Gate     GateCmd     `cmd:"" help:"Resolve operator decisions (gates)."`
	Fsck     FsckCmd     `cmd:"" help:"Check partitions; rebuild tasks.json from the journal."`
}

// readText returns the text of args, or stdin (at most tms.MaxText) for "-".
func readText(args []string, stdin io.Reader) (string, error) {
	if len(args) == 1 && args[0] == "-" {
		data, err := io.ReadAll(io.LimitReader(stdin, tms.MaxText+1))
		if err != nil {
			return "", fmt.Errorf("read stdin: %w", err)
		}
		if len(data) > tms.MaxText {
			return "", errs.New(errs.ErrUsage, fmt.Sprintf("text on stdin is more than the %d KiB limit of a task's text", tms.MaxText>>10))
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

// checkChannel refuses an empty --channel: a channel is a non-empty string
// (docs/layout.md), and "" would silently mean none.
func checkChannel(ch *string) (string, error) {
	if ch == nil {
		return "", nil
	}
	if _, err := home.EncodeChannel(*ch); err != nil || *ch == "" {
		return "", errs.New(errs.ErrUsage, fmt.Sprintf("--channel %q: a channel is a non-empty string with no NUL byte whose encoded form fits in 255 bytes", *ch))
	}
	return *ch, nil
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
	// A broken org.toml is the home's fault, not each worker's: refused
	// once, as every command refuses it.
	org, err := config.LoadOrg(h)
	if err != nil {
		return err
	}
	var fails cli.Failures
	for _, n := range names {
		p, err := tms.Open(h, n, tms.Options{Org: org}) // read once, not once per worker
		if err == nil {
			err = fn(p)
		}
		if err != nil {
			if worker != "" {
				return err
			}
			fails.Report(env, fmt.Errorf("worker %s skipped: %w", n, err))
		}
	}
	return fails.Exit()
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

// fmtTime shows a time in the host zone (Partition.Zone), never the TZ
// of the shell.
func fmtTime(t *time.Time, zone *time.Location) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.In(zone).Format("2006-01-02 15:04")
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
	// Every end of a run and every requeue (show): a task requeued under
	// its id has one entry per attempt.
	History []tms.Attempt `json:"history,omitempty"`
}
