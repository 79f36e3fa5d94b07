package main

// Inside a box (ROSTER_OUTBOX set) roster-task speaks for the worker: each
// verb writes one action into the run's outbox and waits for the host's
// answer (docs/dispatch-and-box.md, "Actions"), then prints what it made and
// exits with the outcome's status (0 ok, 13 stale set version or refused
// set, 2 bad input, 1 otherwise).

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/outbox"
)

// InboxCLI is the grammar inside a box: actions written to the outbox.
type InboxCLI struct {
	cli.Globals

	Complete InboxCompleteCmd `cmd:"" help:"Report the task done (the host still decides: exit 0 and no ceiling are needed too)."`
	Fail     InboxFailCmd     `cmd:"" help:"Report that the task cannot be done, and why."`
	File     InboxFileCmd     `cmd:"" help:"Add a task to your own list; prints its id."`
	Set      InboxSetCmd      `cmd:"" help:"Replace the worker-editable part of your list (set_tasks); needs --version N (stale: exit 13)."`
	Propose  InboxProposeCmd  `cmd:"" help:"Ask an operator to decide something (a gate); prints the gate id."`
	Reply    InboxReplyCmd    `cmd:"" help:"Send a chat message to a channel this run serves (at most 60 per run, 16 KiB each)."`
}

// InboxReplyCmd is `roster-task reply [--channel CHAN] [TEXT | -]`.
type InboxReplyCmd struct {
	Channel string   `name:"channel" placeholder:"CHAN" help:"The channel (ACCOUNT:CHAT); default: the one this run serves."`
	Text    []string `arg:"" optional:"" help:"The message; \"-\" (or nothing) reads it from stdin."`
}

func (c *InboxReplyCmd) Run(env *cli.Env) error {
	args := c.Text
	if len(args) == 0 {
		args = []string{"-"}
	}
	text, err := readText(args, env.Stdin)
	if err != nil {
		return err
	}
	if text == "" {
		return errs.New(errs.ErrUsage, "reply: the text is empty")
	}
	_, err = submit(env, &outbox.Action{Kind: outbox.KindReply, Text: text, Channel: c.Channel})
	return err
}

// InboxCompleteCmd is `roster-task complete [SUMMARY]`.
type InboxCompleteCmd struct {
	Summary string `arg:"" optional:"" help:"What was done."`
}

func (c *InboxCompleteCmd) Run(env *cli.Env) error {
	_, err := submit(env, &outbox.Action{Kind: outbox.KindComplete, Summary: c.Summary})
	return err
}

// InboxFailCmd is `roster-task fail REASON`.
type InboxFailCmd struct {
	Reason string `arg:"" help:"Why the task cannot be done."`
}

func (c *InboxFailCmd) Run(env *cli.Env) error {
	_, err := submit(env, &outbox.Action{Kind: outbox.KindFail, Reason: c.Reason})
	return err
}

// InboxFileCmd is `roster-task file TEXT [--at TIME] [--after ID]...`.
type InboxFileCmd struct {
	Text  string   `arg:"" help:"The task."`
	At    string   `name:"at" placeholder:"TIME" help:"Not before TIME: RFC 3339, YYYY-MM-DD HH:MM (host-local) or +DUR."`
	After []string `name:"after" placeholder:"ID" help:"Only after task ID has completed (repeatable)."`
}

func (c *InboxFileCmd) Run(env *cli.Env) error {
	o, err := submit(env, &outbox.Action{Kind: outbox.KindFile, Text: c.Text, At: c.At, After: c.After})
	if err == nil {
		fmt.Fprintln(env.Stdout, o.Task)
	}
	return err
}

// InboxSetCmd is `roster-task set --version N [FILE | -]`.
type InboxSetCmd struct {
	Version *int64 `name:"set-version" hidden:"" placeholder:"N" help:"--version N: the version of $ROSTER_TASKS_FILE the change was made from (renamed before parsing, see fixArgs)."`
	File    string `arg:"" optional:"" default:"-" help:"The new tasks and templates (JSON, as in schedule.json); - or none for stdin."`
}

func (c *InboxSetCmd) Run(env *cli.Env) error {
	if c.Version == nil { // --version is renamed before parsing: say it in its own name
		return errs.New(errs.ErrUsage, "set needs --version N: the version of $ROSTER_TASKS_FILE the change was made from")
	}
	var r io.Reader = env.Stdin
	if c.File != "-" {
		f, err := os.Open(c.File)
		if err != nil {
			return errs.New(errs.ErrUsage, err.Error())
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, outbox.MaxActionSize+1))
	if err != nil {
		return err
	}
	if len(data) > outbox.MaxActionSize-1024 {
		return errs.New(errs.ErrUsage, fmt.Sprintf("set: the list is over %d bytes", outbox.MaxActionSize-1024))
	}
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return errs.New(errs.ErrUsage, "set: not JSON: "+err.Error())
	}
	o, err := submit(env, &outbox.Action{Kind: outbox.KindSet, Version: *c.Version, Set: raw})
	if err == nil {
		fmt.Fprintln(env.Stdout, o.Version)
	}
	return err
}

// InboxProposeCmd is `roster-task propose WHAT [--wake]`.
type InboxProposeCmd struct {
	What string `arg:"" help:"What needs a person's decision."`
	Wake bool   `name:"wake" help:"When the last gate resolves, file a continuation carrying each gate's outcome."`
}

func (c *InboxProposeCmd) Run(env *cli.Env) error {
	o, err := submit(env, &outbox.Action{Kind: outbox.KindPropose, What: c.What, Wake: c.Wake})
	if err == nil {
		fmt.Fprintln(env.Stdout, o.Gate)
	}
	return err
}

// submit posts a and turns a refusal into the exit status the host chose.
func submit(env *cli.Env, a *outbox.Action) (*outbox.Outcome, error) {
	if _, err := outbox.Encode(a); err != nil {
		return nil, errs.New(errs.ErrUsage, err.Error())
	}
	o, err := outbox.Submit(env.Ctx, os.Getenv("ROSTER_OUTBOX"), a)
	if err != nil {
		return nil, err
	}
	if o.Ok() {
		return o, nil
	}
	for _, r := range o.Refusals {
		cli.Message(env.Stderr, env.Name, "refused", r)
	}
	env.Error("action %d refused: %s", o.N, o.Message)
	code := o.Code
	if code == 0 {
		code = errs.ExitFailure
	}
	return o, &errs.Exit{Code: code}
}
