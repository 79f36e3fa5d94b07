package runs

import (
	"sort"
	"time"

	"github.com/roster-sh/roster/lib/errs"
)

// UsageRow is one line of `roster-runs usage`: the sum over the runs of a
// day, a worker or a model. By model, box and CPU time are not split
// (a run's time is not any one model's) and are left out; Runs counts the
// runs that called the model.
type UsageRow struct {
	Day        string   `json:"day,omitempty"`
	Worker     string   `json:"worker,omitempty"`
	Model      string   `json:"model,omitempty"`
	Runs       int      `json:"runs"`
	BoxSeconds *float64 `json:"box_seconds,omitempty"`
	CPUSeconds *float64 `json:"cpu_seconds,omitempty"`
	ModelUse
}

// WorkerRuns is one worker's runs as WorkerUsage returned them.
type WorkerRuns struct {
	Worker string
	Runs   []RunUsage
}

// Usage groupings.
const (
	ByDay    = "day"
	ByWorker = "worker"
	ByModel  = "model"
)

// SumUsage sums runs by day (the local day of each run's start, in loc;
// nil: time.Local), by worker or by model, in that key's order. A model's
// figures are the ledger's; what a run's record counts beyond its ledger
// is under UnattributedModel.
func SumUsage(ws []WorkerRuns, by string, loc *time.Location) ([]UsageRow, error) {
	if loc == nil {
		loc = time.Local
	}
	rows := map[string]*UsageRow{}
	get := func(key string, set func(*UsageRow)) *UsageRow {
		r := rows[key]
		if r == nil {
			r = &UsageRow{}
			set(r)
			rows[key] = r
		}
		return r
	}
	addTime := func(r *UsageRow, u RunUsage) {
		if r.BoxSeconds == nil {
			r.BoxSeconds, r.CPUSeconds = new(float64), new(float64)
		}
		*r.BoxSeconds += u.WallSeconds
		*r.CPUSeconds += u.CPUSeconds
	}
	for _, w := range ws {
		for _, u := range w.Runs {
			switch by {
			case ByDay, "":
				day := u.StartedAt.In(loc).Format("2006-01-02")
				r := get(day, func(r *UsageRow) { r.Day = day })
				r.Runs++
				addTime(r, u)
				r.add(u.ModelUse)
			case ByWorker:
				r := get(w.Worker, func(r *UsageRow) { r.Worker = w.Worker })
				r.Runs++
				addTime(r, u)
				r.add(u.ModelUse)
			case ByModel:
				for name, m := range u.Models {
					r := get(name, func(r *UsageRow) { r.Model = name })
					r.Runs++
					r.add(*m)
				}
			default:
				return nil, errs.New(errs.ErrUsage, "--by "+by+": want day, worker or model")
			}
		}
	}
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]UsageRow, 0, len(keys))
	for _, k := range keys {
		out = append(out, *rows[k])
	}
	return out, nil
}
