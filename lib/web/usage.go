package web

import (
	"net/http"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/runs"
)

// usageData is the usage page: the rows of `roster-runs usage --by day`,
// `--by worker` and `--by model` over the same runs, each with bars
// drawn on the server as SVG (no script, no library).
type usageData struct {
	Since    string
	Problems []string
	Tables   []usageTable
}

type usageTable struct {
	By   string
	Rows []usageBar
	Max  float64 // the longest bar's value (USD, or tokens when nothing is priced)
	Unit string  // "USD" or "tokens"
}

// usageBar is one row with its bar's width in SVG units (of 400).
type usageBar struct {
	runs.UsageRow
	Key   string
	Value float64
	Width int
	Y     int
	Label string // the bar's figure
}

// barWidth is the SVG's width for the longest bar.
const barWidth = 400

func (s *Server) usagePage(w http.ResponseWriter, r *http.Request) {
	since := r.URL.Query().Get("since")
	if since == "" {
		since = "30d"
	}
	d, err := s.usageData(since)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, "usage", s.page(r, "usage", d))
}

func (s *Server) usageData(sinceArg string) (*usageData, error) {
	h, now := s.cfg.Home, s.cfg.Now()
	org, err := config.LoadOrg(h)
	if err != nil {
		return nil, err
	}
	since, err := runs.ParseSince(sinceArg, now, org.Zone())
	if err != nil {
		return nil, err
	}
	workers, err := runs.DataWorkers(h)
	if err != nil {
		return nil, err
	}
	d := &usageData{Since: sinceArg}
	rates := ratesOf(org)
	var all []runs.WorkerRuns
	for _, wk := range workers {
		rows, problems, err := runs.WorkerUsage(h.Worker(wk), since, now)
		if err != nil {
			return nil, err
		}
		for _, p := range problems {
			d.Problems = append(d.Problems, p.Error())
		}
		for i := range rows {
			runs.Reprice(&rows[i], rates)
		}
		all = append(all, runs.WorkerRuns{Worker: wk, Runs: rows})
	}
	for _, by := range []string{runs.ByDay, runs.ByWorker, runs.ByModel} {
		rows, err := runs.SumUsage(all, by, org.Zone())
		if err != nil {
			return nil, err
		}
		d.Tables = append(d.Tables, bars(by, rows))
	}
	return d, nil
}

// bars sizes each row's bar against the largest: by spend when any row
// is priced, else by tokens.
func bars(by string, rows []runs.UsageRow) usageTable {
	t := usageTable{By: by, Unit: "tokens"}
	for _, r := range rows {
		if r.USD != nil && *r.USD > 0 {
			t.Unit = "USD"
		}
	}
	for i, r := range rows {
		b := usageBar{UsageRow: r, Key: r.Day + r.Worker + r.Model, Y: i * 22}
		if b.Key == "" {
			b.Key = "-"
		}
		if t.Unit == "USD" {
			if r.USD != nil {
				b.Value = *r.USD
			}
		} else {
			b.Value = float64(r.InputTokens + r.OutputTokens)
		}
		if b.Value > t.Max {
			t.Max = b.Value
		}
		t.Rows = append(t.Rows, b)
	}
	for i := range t.Rows {
		b := &t.Rows[i]
		b.Width = pct(b.Value, t.Max) * barWidth / 100
		b.Label = compact(int64(b.Value)) + " tok"
		if t.Unit == "USD" {
			b.Label = usd(b.Value)
		}
	}
	return t
}

// Height is the SVG's height for the table's bars.
func (t usageTable) Height() int { return len(t.Rows)*22 + 4 }
