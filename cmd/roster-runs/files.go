package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/transcript"
)

// ContextCmd prints briefing.md.
type ContextCmd struct {
	ID string `arg:"" name:"RUN" help:"The run (any unique prefix of its id)."`
}

// RecallCmd prints recall.json as a table.
type RecallCmd struct {
	ID   string `arg:"" name:"RUN" help:"The run (any unique prefix of its id)."`
	JSON bool   `name:"json" help:"One JSON object per briefing part (JSON Lines)."`
}

// LogCmd prints transcript.log: an agent's run as a conversation, a plain
// command's output as it came.
type LogCmd struct {
	ID     string `arg:"" name:"RUN" help:"The run (any unique prefix of its id)."`
	Follow bool   `short:"f" help:"Keep printing what the box writes until the run ends."`
	Raw    bool   `help:"Print transcript.log byte for byte: the agent's own JSON events." xor:"form"`
	JSON   bool   `name:"json" help:"One JSON object per step of the conversation (kind, text, tool, args, is_error, line), nothing cut." xor:"form"`
}

// ChangesCmd prints store-changes.txt.
type ChangesCmd struct {
	ID string `arg:"" name:"RUN" help:"The run (any unique prefix of its id)."`
}

// lookup resolves a run prefix; the file verbs do not need a readable
// run.json, so a corrupt one does not hide the transcript.
func lookup(g *cli.Globals, prefix string) (runs.Entry, error) {
	h, err := g.OpenHome()
	if err != nil {
		return runs.Entry{}, err
	}
	return runs.Resolve(h, prefix)
}

// copyFile prints a run file; a missing one is exit 12 saying what is missing.
func copyFile(w io.Writer, path, what string, e runs.Entry) error {
	f, err := fsx.OpenRegular(path) // never a planted link or FIFO
	if errors.Is(err, os.ErrNotExist) {
		return errs.New(errs.ErrNotFound, fmt.Sprintf("run %s has no %s (%s)", e.ID, what, state(e)))
	}
	if err != nil {
		return err
	}
	defer f.Close()
	return copyOut(w, f)
}

// copyOut copies a run file verbatim, or escaped for a terminal (PrintableText)
// when w is one: these files hold what a worker wrote.
func copyOut(w io.Writer, r io.Reader) error {
	if !cli.IsTerminal(w) {
		_, err := io.Copy(w, r)
		return err
	}
	tw := cli.NewPrintableWriter(w)
	if _, err := io.Copy(tw, r); err != nil {
		return err
	}
	return tw.Close()
}

func (c *ContextCmd) Run(g *cli.Globals, env *cli.Env) error {
	e, err := lookup(g, c.ID)
	if err != nil {
		return err
	}
	return copyFile(env.Stdout, home.Briefing(e.Dir), "briefing", e)
}

func (c *RecallCmd) Run(g *cli.Globals, env *cli.Env) error {
	e, err := lookup(g, c.ID)
	if err != nil {
		return err
	}
	parts, err := runs.ReadRecall(e.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return errs.New(errs.ErrNotFound, fmt.Sprintf("run %s has no recall.json (%s)", e.ID, state(e)))
	}
	if err != nil {
		return err
	}
	if c.JSON {
		for _, p := range parts {
			if err := cli.JSONLine(env.Stdout, p); err != nil {
				return err
			}
		}
		return nil
	}
	rows := make([][]string, 0, len(parts))
	for _, p := range parts {
		rows = append(rows, []string{dash(p.Part), dash(p.Source), dash(p.Why)})
	}
	return cli.Table(env.Stdout, []string{"PART", "SOURCE", "WHY"}, rows)
}

func (c *LogCmd) Run(g *cli.Globals, env *cli.Env) error {
	e, err := lookup(g, c.ID)
	if err != nil {
		return err
	}
	if c.Raw || (!c.JSON && !agentRun(e)) {
		return c.raw(env, e)
	}
	var out io.Writer = env.Stdout
	if !c.JSON && cli.IsTerminal(env.Stdout) {
		tw := cli.NewPrintableWriter(env.Stdout)
		defer tw.Close()
		out = tw
	}
	tw := transcript.NewWriter(out, agentName(e), c.JSON)
	if c.Follow {
		err = runs.Follow(env.Ctx, e.Dir, tw, 0)
	} else {
		err = copyFile(tw, home.Transcript(e.Dir), "transcript", e)
	}
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	return err
}

// raw prints transcript.log as it is (escaped on a terminal).
func (c *LogCmd) raw(env *cli.Env, e runs.Entry) error {
	if c.Follow {
		if cli.IsTerminal(env.Stdout) {
			tw := cli.NewPrintableWriter(env.Stdout)
			defer tw.Close()
			return runs.Follow(env.Ctx, e.Dir, tw, 0)
		}
		return runs.Follow(env.Ctx, e.Dir, env.Stdout, 0)
	}
	return copyFile(env.Stdout, home.Transcript(e.Dir), "transcript", e)
}

// agentRun says whether the transcript is an agent's events: every run but
// a finished one whose record names no agent (a plain command's output is
// printed as it came). A run under way or with an unreadable record is
// rendered: a line that is not an agent's event passes through as it is.
func agentRun(e runs.Entry) bool {
	return e.Record == nil || e.Record.Agent != nil || e.Record.Ended == ""
}

func agentName(e runs.Entry) string {
	if e.Record != nil && e.Record.Agent != nil {
		return e.Record.Agent.Name
	}
	return ""
}

func (c *ChangesCmd) Run(g *cli.Globals, env *cli.Env) error {
	e, err := lookup(g, c.ID)
	if err != nil {
		return err
	}
	path := home.StoreChanges(e.Dir)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && e.Record != nil && e.Record.Ended != "" {
		// A finished run without a change list: say why rather than fail,
		// when it simply changed nothing.
		if e.Record.Snapshot == "unchanged" {
			return nil
		}
		return errs.New(errs.ErrNotFound, fmt.Sprintf("run %s has no store changes recorded (snapshot: %s)", e.ID, dash(e.Record.Snapshot)))
	}
	return copyFile(env.Stdout, path, "store changes yet", e)
}
