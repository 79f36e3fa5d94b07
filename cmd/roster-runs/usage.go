package main

import (
	"strconv"
	"time"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/runs"
)

// UsageCmd sums what runs used, from the run records (and the index kept
// of them).
type UsageCmd struct {
	Worker   []string `short:"w" placeholder:"W" help:"Only this worker's runs (repeatable; default: every worker)."`
	Since    string   `placeholder:"TIME" help:"Only runs started since TIME (RFC 3339, \"YYYY-MM-DD HH:MM\", or an age like 36h or 7d)."`
	By       string   `placeholder:"KEY" default:"day" enum:"day,worker,model" help:"One row per host-local day, worker or model (default: day)."`
	JSON     bool     `name:"json" help:"One JSON object per row (JSON Lines)."`
	Recorded bool     `help:"Spend as each run recorded it, not re-priced at org.toml's [gateway.prices] of today."`
}

func (c *UsageCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	now := time.Now()
	org, err := config.LoadOrg(h) // its zone, and its prices for re-pricing
	if err != nil {
		return err
	}
	zone := org.Zone()
	var since time.Time
	if c.Since != "" {
		if since, err = runs.ParseSince(c.Since, now, zone); err != nil {
			return err
		}
	}
	workers := c.Worker
	for _, w := range workers {
		if _, err := h.ExistingWorker(w); err != nil {
			return err
		}
	}
	if len(workers) == 0 {
		if workers, err = runs.DataWorkers(h); err != nil {
			return err
		}
	}
	rates := map[string]runs.Rate{}
	if !c.Recorded {
		for m, p := range org.Gateway.Prices {
			rates[m] = runs.Rate(p)
		}
	}
	var all []runs.WorkerRuns
	for _, w := range workers {
		rows, problems, err := runs.WorkerUsage(h.Worker(w), since, now)
		if err != nil {
			return err
		}
		for _, p := range problems {
			env.Warn("%v", p)
		}
		for i := range rows {
			runs.Reprice(&rows[i], rates)
		}
		all = append(all, runs.WorkerRuns{Worker: w, Runs: rows})
	}
	rows, err := runs.SumUsage(all, c.By, zone)
	if err != nil {
		return err
	}
	if c.JSON {
		for _, r := range rows {
			if err := cli.JSONLine(env.Stdout, r); err != nil {
				return err
			}
		}
		return nil
	}
	key := map[string]string{runs.ByDay: "DAY", runs.ByWorker: "WORKER", runs.ByModel: "MODEL"}[c.By]
	header := []string{key, "RUNS", "BOX", "CPU", "CALLS", "IN", "OUT", "CACHE-READ", "CACHE-WRITE", "USD"}
	var cells [][]string
	var total runs.UsageRow
	for _, r := range rows {
		cells = append(cells, usageCells(dash(r.Day+r.Worker+r.Model), r))
		total.Runs += r.Runs
		if r.BoxSeconds != nil {
			if total.BoxSeconds == nil {
				total.BoxSeconds, total.CPUSeconds = new(float64), new(float64)
			}
			*total.BoxSeconds += *r.BoxSeconds
			*total.CPUSeconds += *r.CPUSeconds
		}
		total.Calls += r.Calls
		total.InputTokens += r.InputTokens
		total.OutputTokens += r.OutputTokens
		total.CacheReadTokens += r.CacheReadTokens
		total.CacheWriteTokens += r.CacheWriteTokens
		total.Unpriced += r.Unpriced
		total.Repriced = total.Repriced || r.Repriced
		if r.USD != nil {
			v := *r.USD
			if total.USD != nil {
				v += *total.USD
			}
			total.USD = &v
		}
	}
	if len(rows) > 1 && c.By != runs.ByModel {
		cells = append(cells, usageCells("total", total))
	}
	return cli.Table(env.Stdout, header, cells)
}

func usageCells(key string, r runs.UsageRow) []string {
	box, cpu := "-", "-"
	if r.BoxSeconds != nil {
		box, cpu = seconds(*r.BoxSeconds), seconds(*r.CPUSeconds)
	}
	spend := "-"
	if r.USD != nil {
		spend = usd(*r.USD)
	}
	if r.Unpriced > 0 {
		spend += " (" + plural(r.Unpriced, "call") + " unpriced)"
	}
	if r.Repriced {
		spend += " (re-priced)"
	}
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []string{key, strconv.Itoa(r.Runs), box, cpu, strconv.Itoa(r.Calls), n(r.InputTokens), n(r.OutputTokens),
		n(r.CacheReadTokens), n(r.CacheWriteTokens), spend}
}
