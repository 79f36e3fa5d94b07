package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/runs"
)

// GatewayCmd prints a run's gateway ledger.
type GatewayCmd struct {
	ID   string `arg:"" name:"RUN" help:"The run (any unique prefix of its id)."`
	JSON bool   `name:"json" help:"The ledger's lines as they are (JSON Lines), bad ones left out."`
}

// gatewayBlock is how many rows are aligned together: the table is
// printed as it is read, never held whole.
const gatewayBlock = 256

// maxLedgerWarnings caps the warnings about bad lines; a count of the rest
// follows.
const maxLedgerWarnings = 20

func (c *GatewayCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	e, err := runs.Resolve(h, c.ID) // a corrupt run.json does not hide the ledger
	if err != nil {
		return err
	}
	path := runs.GatewayLedger(e.Dir)
	zone, err := hostZone(h)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	header := "SEQ\tAT\tKIND\tMETHOD\tTARGET\tDECISION\tSTATUS\tUP\tDOWN\tMS\tMODEL\tIN\tOUT\tUSD\n"
	rows, bad, warned := 0, 0, 0
	live := e.Live() // its gateway may be appending the last line right now
	err = runs.ScanLedger(e.Dir, func(l runs.LedgerLine) error {
		if l.Torn && live {
			return nil
		}
		if l.Err != nil {
			if !l.Torn {
				bad++
			}
			if warned++; warned <= maxLedgerWarnings {
				what := "skipped"
				if l.Torn {
					what = "ignored"
				}
				env.Warn("%s: %s; %s", path, l.Err, what)
			}
			return nil
		}
		if c.JSON {
			_, err := env.Stdout.Write(append(l.Raw, '\n'))
			return err
		}
		if rows%gatewayBlock == 0 {
			if err := tw.Flush(); err != nil {
				return err
			}
			if rows == 0 {
				fmt.Fprint(tw, header)
			}
		}
		rows++
		fmt.Fprintln(tw, strings.Join(ledgerCells(l.Entry, zone), "\t"))
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return errs.New(errs.ErrNotFound, fmt.Sprintf("run %s has no gateway ledger (%s; a box without a gateway, or none asked anything yet)", e.ID, state(e)))
	}
	if err != nil {
		return err
	}
	if !c.JSON {
		if rows == 0 {
			fmt.Fprint(tw, header)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if warned > maxLedgerWarnings {
		env.Warn("%s: %d more bad lines not named", path, warned-maxLedgerWarnings)
	}
	if bad > 0 {
		what := fmt.Sprintf("%d lines are not ledger entries", bad)
		if bad == 1 {
			what = "1 line is not a ledger entry"
		}
		return errs.New(errs.ErrRefused, fmt.Sprintf("%s: %s (the rest were printed)", path, what))
	}
	return nil
}

// ledgerCells is one ledger entry as a table row, each cell one line and
// escaped for the terminal (hosts and paths are what the box asked for).
func ledgerCells(e runs.LedgerEntry, zone *time.Location) []string {
	target := e.Host
	switch {
	case e.Kind == "model":
		target = e.Provider + e.Path
	case e.Port != 0:
		target = e.Host + ":" + strconv.Itoa(e.Port)
	}
	decision := e.Decision
	switch {
	case e.Open:
		decision = "open"
	case e.Refusal != "":
		decision += ": " + e.Refusal
	}
	at := "-"
	if !e.At.IsZero() {
		at = e.At.In(zone).Format("15:04:05")
	}
	model, in, out, cost := "-", "-", "-", "-"
	if e.Kind == "model" {
		model = dash(e.Model)
		in, out = strconv.FormatInt(e.InputTokens, 10), strconv.FormatInt(e.OutputTokens, 10)
		if e.Estimated {
			in, out = "~"+in, "~"+out // the gateway's estimate
		}
	}
	if e.CostUSD != nil {
		cost = usd(*e.CostUSD)
	}
	status := "-"
	if e.Status != 0 {
		status = strconv.Itoa(e.Status)
	}
	cells := []string{strconv.FormatInt(e.Seq, 10), at, dash(e.Kind), dash(e.Method), dash(target), dash(decision), status,
		strconv.FormatInt(e.BytesUp, 10), strconv.FormatInt(e.BytesDn, 10), strconv.FormatInt(e.MS, 10), model, in, out, cost}
	for i, c := range cells {
		cells[i] = cli.Printable(strings.NewReplacer("\t", " ", "\n", " ").Replace(c))
	}
	return cells
}
