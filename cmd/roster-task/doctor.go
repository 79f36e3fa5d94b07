package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/doctor"
	"github.com/roster-sh/roster/lib/errs"
)

// DoctorCmd is `doctor`: every host and home check at once, each problem
// with its fix.
type DoctorCmd struct {
	JSON  bool `name:"json" help:"One JSON object: every finding (check, level, subject, message, fix) and the counts."`
	Clean bool `help:"Remove the generated /etc folders under /run/roster that no box uses any more."`
	All   bool `short:"a" help:"List what is fine too, not only what is wrong."`
}

func (c *DoctorCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	rep := doctor.Run(env.Ctx, doctor.Options{Home: h, Clean: c.Clean})
	problems, warnings := rep.Count(doctor.Problem), rep.Count(doctor.Warning)
	if c.JSON {
		err = cli.JSONLine(env.Stdout, struct {
			Format   int              `json:"format"`
			Problems int              `json:"problems"`
			Warnings int              `json:"warnings"`
			Findings []doctor.Finding `json:"findings"`
		}{1, problems, warnings, rep.Findings})
	} else {
		err = printFindings(env.Stdout, rep.Findings, c.All)
		if err == nil {
			_, err = fmt.Fprintln(env.Stdout, doctorSummary(problems, warnings))
		}
	}
	if err != nil {
		return err
	}
	if problems > 0 {
		return &errs.Exit{Code: errs.ExitFailure}
	}
	return nil
}

// printFindings writes one block per finding: level, check, subject and
// message, then the fix indented under it.
func printFindings(w io.Writer, fs []doctor.Finding, all bool) error {
	var b strings.Builder
	for _, f := range fs {
		if f.Level == doctor.OK && !all {
			continue
		}
		subject := ""
		if f.Subject != "" {
			subject = f.Subject + ": "
		}
		fmt.Fprintf(&b, "%-8s %-10s %s%s\n", f.Level, f.Check, subject, f.Message)
		if f.Fix != "" {
			fmt.Fprintf(&b, "%-19s fix: %s\n", "", f.Fix)
		}
	}
	_, err := io.WriteString(w, cli.PrintableText(b.String()))
	return err
}

func doctorSummary(problems, warnings int) string {
	if problems == 0 && warnings == 0 {
		return "no problems found (roster doctor --all lists what was checked)"
	}
	return fmt.Sprintf("%s, %s", countOf(problems, "problem"), countOf(warnings, "warning"))
}

func countOf(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
