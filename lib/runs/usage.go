package runs

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/roster-sh/roster/lib/home"
)

// Usage is computed from run records only (docs/gateway.md, "Usage"):
// run.json's cost for box time, CPU and the model totals, and the run's
// gateway ledger for the split by model. Nothing a box wrote is read.

// StandingProactive is a run's standing that the budget paces.
const StandingProactive = "proactive"

// RunUsage is one run's figures as usage and the budget count them.
type RunUsage struct {
	ID          string    `json:"id"`
	StartedAt   time.Time `json:"started_at"`
	Standing    string    `json:"standing,omitempty"`
	Live        bool      `json:"-"` // not ended when read (figures so far; never indexed)
	WallSeconds float64   `json:"wall_seconds"`
	CPUSeconds  float64   `json:"cpu_seconds"`
	ModelUse
	Models map[string]*ModelUse `json:"models,omitempty"` // by model, from the ledger; "-" is what the ledger does not attribute

	// run.json's identity when indexed: a row is reused only while it
	// matches (the record was not replaced since).
	Stat *fileKey `json:"stat,omitempty"`
}

// ModelUse is model calls, tokens and spend.
type ModelUse struct {
	Calls            int      `json:"model_calls"`
	InputTokens      int64    `json:"input_tokens"`
	OutputTokens     int64    `json:"output_tokens"`
	CacheReadTokens  int64    `json:"cache_read_tokens"`
	CacheWriteTokens int64    `json:"cache_write_tokens"`
	USD              *float64 `json:"usd,omitempty"`      // the priced spend (nil: nothing priced)
	Unpriced         int      `json:"unpriced,omitempty"` // calls without a price
	// Repriced: USD is today's prices applied to the recorded tokens, and
	// differs from what the run recorded (Reprice).
	Repriced bool `json:"repriced,omitempty"`
}

// Tokens is input plus output tokens: what proactive_tokens limits.
func (m ModelUse) Tokens() int64 { return m.InputTokens + m.OutputTokens }

func (m *ModelUse) add(o ModelUse) {
	m.Calls += o.Calls
	m.InputTokens += o.InputTokens
	m.OutputTokens += o.OutputTokens
	m.CacheReadTokens += o.CacheReadTokens
	m.CacheWriteTokens += o.CacheWriteTokens
	m.Unpriced += o.Unpriced
	m.Repriced = m.Repriced || o.Repriced
	if o.USD != nil {
		v := *o.USD
		if m.USD != nil {
			v += *m.USD
		}
		m.USD = &v
	}
}

type fileKey struct {
	Ino   uint64 `json:"ino"`
	Size  int64  `json:"size"`
	MTime int64  `json:"mtime_ns"`
}

// UnattributedModel is the by-model name of what run.json counts beyond
// the ledger's lines (a ledger cut at its size bound, or lost).
const UnattributedModel = "-"

// UsageOf computes one run's usage from its record and its ledger. A run
// still running counts its ledger so far and its time until now; a lost
// one (no end recorded, its supervisor gone) its ledger and no time; an
// ended run's totals are run.json's, and the ledger only splits them by
// model.
// A missing ledger is no error (a box without a gateway); bad ledger lines
// are left out.
func UsageOf(runDir string, r *Record, now time.Time) (RunUsage, error) {
	u := RunUsage{ID: r.ID, StartedAt: r.StartedAt, Standing: r.Standing,
		WallSeconds: r.Cost.WallSeconds, CPUSeconds: r.Cost.CPUSeconds}
	if r.EndedAt == nil && !Finished(runDir) {
		u.Live = true
		if d := now.Sub(r.StartedAt); d > 0 {
			u.WallSeconds = d.Seconds()
		}
	}
	models := map[string]*ModelUse{}
	var ledger ModelUse
	err := ScanLedger(runDir, func(l LedgerLine) error {
		e := l.Entry
		if l.Err != nil || e.Kind != "model" || e.Decision != "allowed" || e.Open {
			return nil
		}
		c := ModelUse{Calls: 1, InputTokens: e.InputTokens, OutputTokens: e.OutputTokens,
			CacheReadTokens: e.CacheReadTokens, CacheWriteTokens: e.CacheWriteTokens}
		if e.CostUSD != nil {
			v := *e.CostUSD
			c.USD = &v
		} else {
			c.Unpriced = 1
		}
		name := e.Model
		if name == "" || name == UnattributedModel {
			name = UnattributedModel
		}
		if models[name] == nil {
			models[name] = &ModelUse{}
		}
		models[name].add(c)
		ledger.add(c)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return u, fmt.Errorf("%s: %w", GatewayLedger(runDir), err)
	}
	if r.EndedAt == nil {
		// Live, or lost (its supervisor gone before it wrote the end, and
		// not reaped yet: no time counted, the calls it made do count).
		u.ModelUse = ledger
	} else {
		u.ModelUse = ModelUse{Calls: r.Cost.ModelCalls, InputTokens: r.Cost.InputTokens, OutputTokens: r.Cost.OutputTokens,
			CacheReadTokens: r.Cost.CacheReadTokens, CacheWriteTokens: r.Cost.CacheWriteTokens, USD: r.Cost.USD}
		if rest := remainder(u.ModelUse, ledger); rest.Calls > 0 || rest.Tokens() > 0 || rest.CacheReadTokens > 0 || rest.CacheWriteTokens > 0 {
			if models[UnattributedModel] == nil {
				models[UnattributedModel] = &ModelUse{}
			}
			models[UnattributedModel].add(rest)
		}
		switch {
		case r.Cost.USD != nil: // every call was priced
		case ledger.USD != nil: // partly priced: the priced calls' spend
			u.USD = ledger.USD
			u.Unpriced = max(u.Calls-(ledger.Calls-ledger.Unpriced), 0)
		default:
			u.Unpriced = u.Calls
		}
	}
	if len(models) > 0 {
		u.Models = models
	}
	return u, nil
}

// remainder is what total counts beyond the ledger's sums (never below 0).
func remainder(total, ledger ModelUse) ModelUse {
	pos := func(a, b int64) int64 { return max(a-b, 0) }
	r := ModelUse{
		Calls:            max(total.Calls-ledger.Calls, 0),
		InputTokens:      pos(total.InputTokens, ledger.InputTokens),
		OutputTokens:     pos(total.OutputTokens, ledger.OutputTokens),
		CacheReadTokens:  pos(total.CacheReadTokens, ledger.CacheReadTokens),
		CacheWriteTokens: pos(total.CacheWriteTokens, ledger.CacheWriteTokens),
	}
	if total.USD != nil {
		spent := 0.0
		if ledger.USD != nil {
			spent = *ledger.USD
		}
		if v := *total.USD - spent; v > 1e-9 {
			r.USD = &v
		}
	} else {
		r.Unpriced = r.Calls
	}
	return r
}

// idMargin is how much earlier than its start a run's id may say: the id
// is made at the claim, started_at when the supervisor starts.
const idMargin = time.Hour

// LocalDay returns the bounds of the local day (in loc; nil: time.Local)
// that holds t.
func LocalDay(t time.Time, loc *time.Location) (start, end time.Time) {
	if loc == nil {
		loc = time.Local
	}
	l := t.In(loc)
	start = time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, loc)
	return start, start.AddDate(0, 0, 1)
}

// SpentToday is what the budget's token and spend limits count
// (docs/gateway.md, "Configuration"): input plus output tokens and priced
// USD of worker's proactive runs that started on now's local day in loc
// (nil: time.Local), ended runs from their records, live ones from their
// ledgers so far. It reads run folders directly, never the usage index, so
// no index can stop dispatch. Runs whose record cannot be read are left
// out. Its error is only for a runs folder that cannot be listed.
func SpentToday(h home.Home, worker string, now time.Time, loc *time.Location) (tokens int64, usd float64, err error) {
	start, end := LocalDay(now, loc)
	w := h.Worker(worker)
	ids, err := IDs(w)
	if err != nil {
		return 0, 0, err
	}
	for _, id := range ids {
		// A run's id is the time of its claim in UTC, its start a moment
		// later: skip other days unread, with an hour's margin.
		rt, err := home.RunTime(id)
		if err != nil || rt.Before(start.Add(-idMargin)) || !rt.Before(end) {
			continue
		}
		r, err := ReadRecord(w.Run(id))
		if err != nil || r.Standing != StandingProactive || r.StartedAt.Before(start) || !r.StartedAt.Before(end) {
			continue
		}
		if r.EndedAt != nil && (r.Cost.USD != nil || r.Cost.ModelCalls == 0) {
			// The record says it all; the ledger would only split it by model.
			tokens += r.Cost.InputTokens + r.Cost.OutputTokens
			if r.Cost.USD != nil {
				usd += *r.Cost.USD
			}
			continue
		}
		u, _ := UsageOf(w.Run(id), r, now) // a ledger that cannot be read: what was read counts
		tokens += u.Tokens()
		if u.USD != nil {
			usd += *u.USD
		}
	}
	return tokens, usd, nil
}
