package web

import (
	"context"
	"net/http"
	"os"
	"sort"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

// workerRow is one worker on the overview: what `roster worker ls` and
// `roster-task due` say of it, its live boxes and today's spend.
type workerRow struct {
	Name    string
	Err     string // why it could not be read (the rest is empty)
	Paused  bool
	Holds   []string
	Live    []string // run ids of its live boxes
	Pending int
	Claimed int
	Review  int
	Next    string // the next scheduled task or template activation, host zone
	Budget  tms.Budget
	Today   runs.ModelUse // today's model use, every run (the usage index)
	Box     time.Duration // today's box time, every run
	Runs    int           // runs started today
}

// BudgetPct is the box-time budget used today, in percent (0 unlimited).
func (r workerRow) BudgetPct() int {
	if r.Budget.Unlimited {
		return 0
	}
	return pct(r.Budget.Used.Seconds(), r.Budget.Limit.Seconds())
}

// USD is today's priced spend.
func (r workerRow) USD() float64 {
	if r.Today.USD == nil {
		return 0
	}
	return *r.Today.USD
}

// Overview reads every worker's row (in parallel: at 100 workers the
// folder reads are the time).
func Overview(ctx context.Context, h home.Home, now time.Time) ([]workerRow, *config.Org, error) {
	names, err := config.ListWorkers(h)
	if err != nil {
		return nil, nil, err
	}
	org, err := config.LoadOrg(h)
	if err != nil {
		return nil, nil, err
	}
	specs, specErrs := config.LoadWorkers(h, names)
	boxes := boxesOnHost()
	rows := make([]workerRow, len(names))
	fsx.Each(len(names), func(i int) {
		rows[i] = overviewRow(ctx, h, org, names[i], specs[i], specErrs[i], now)
		// A box on this host whose run is this worker's (an ad-hoc run
		// started before midnight is in no claim and not in today's usage).
		rows[i].Live = liveOf(h.Worker(names[i]), append(rows[i].Live, boxes...))
	})
	return rows, org, nil
}

func overviewRow(ctx context.Context, h home.Home, org *config.Org, name string, spec *config.Worker, err error, now time.Time) workerRow {
	r := workerRow{Name: name}
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.Paused = spec.Paused
	p, err := tms.Open(h, name, tms.Options{Org: org, Worker: spec})
	if err != nil {
		r.Err = err.Error()
		return r
	}
	d, err := p.Due(ctx)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.Holds, r.Budget = d.Holds, d.Budget
	if !d.Next.IsZero() {
		r.Next = when(d.Next, org.Zone())
	}
	var claims []string
	for _, e := range d.Entries {
		switch e.State {
		case tms.Pending:
			r.Pending++
		case tms.Claimed:
			r.Claimed++
			if e.Claim != nil {
				claims = append(claims, e.Claim.Run)
			}
		case tms.NeedsReview:
			r.Review++
		}
	}
	start, _ := runs.LocalDay(now, org.Zone())
	today, _, err := runs.WorkerUsage(h.Worker(name), start, now)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	rates := ratesOf(org)
	for i := range today {
		if today[i].Live {
			claims = append(claims, today[i].ID) // not ended: an ad-hoc box may be live
		}
		runs.Reprice(&today[i], rates)
		addUse(&r.Today, today[i].ModelUse)
		r.Box += time.Duration(today[i].WallSeconds * float64(time.Second))
	}
	r.Runs = len(today)
	r.Live = claims // candidates: Overview keeps those whose box is alive
	return r
}

// boxesOnHost is the run ids with a box's scratch folder on this host
// (home.BoxScratch: one per box being run, of any home; a crash's leftover
// is told apart by its box.json).
func boxesOnHost() []string {
	ents, _ := os.ReadDir(home.BoxScratchDir)
	var ids []string
	for _, e := range ents {
		if home.IsRunID(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	return ids
}

// liveOf is the runs among ids whose supervisor is alive (box.json read,
// nothing else).
func liveOf(w home.Worker, ids []string) []string {
	var live []string
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		if b, err := runs.ReadBoxInfo(w.Run(id)); err == nil && b.Alive() {
			live = append(live, id)
		}
	}
	sort.Strings(live)
	return live
}

// ratesOf is org.toml's [gateway.prices], for re-pricing as
// `roster-runs usage` does.
func ratesOf(org *config.Org) map[string]runs.Rate {
	rates := map[string]runs.Rate{}
	for m, p := range org.Gateway.Prices {
		rates[m] = runs.Rate(p)
	}
	return rates
}

func addUse(to *runs.ModelUse, u runs.ModelUse) {
	to.Calls += u.Calls
	to.InputTokens += u.InputTokens
	to.OutputTokens += u.OutputTokens
	to.CacheReadTokens += u.CacheReadTokens
	to.CacheWriteTokens += u.CacheWriteTokens
	to.Unpriced += u.Unpriced
	if u.USD != nil {
		v := *u.USD
		if to.USD != nil {
			v += *to.USD
		}
		to.USD = &v
	}
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	now := s.cfg.Now()
	rows, org, err := Overview(r.Context(), s.cfg.Home, now)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p := s.page(r, "workers", rows)
	p.Loc = org.Zone()
	s.render(w, "overview", p)
}
