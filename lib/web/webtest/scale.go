package webtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

// BuildScale makes a home of workers workers with runsEach ended runs
// each, spread over the last 100 days (the newest today), and three
// pending tasks each: the overview's benchmark (issue 29: 100 workers,
// 100,000 runs). Workers are added and tasks filed through the
// libraries; the run folders are written plainly (run.json as a
// supervisor writes it, without its fsync: a hundred thousand of them).
func BuildScale(ctx context.Context, dir string, workers, runsEach, uid int) (home.Home, error) {
	h, err := home.At(dir)
	if err != nil {
		return h, err
	}
	if err := h.InitData(); err != nil {
		return h, err
	}
	if err := fsx.WriteNew(h.OrgFile(), []byte(config.DefaultOrgTOML), 0o644); err != nil {
		return h, err
	}
	now := time.Now().UTC()
	for i := 0; i < workers; i++ {
		name := fmt.Sprintf("w%03d", i)
		if _, err := config.AddWorker(ctx, h, config.NewWorker{Name: name, Command: []string{"/bin/true"}, Heartbeat: "off", UID: uid + i}); err != nil {
			return h, err
		}
		p, err := tms.Open(h, name, tms.Options{})
		if err != nil {
			return h, err
		}
		for k := 0; k < 3; k++ {
			if _, err := p.Add(ctx, tms.NewTask{Text: fmt.Sprintf("task %d", k)}); err != nil {
				return h, err
			}
		}
		if err := scaleRuns(h.Worker(name), runsEach, now); err != nil {
			return h, err
		}
	}
	return h, nil
}

func scaleRuns(w home.Worker, n int, now time.Time) error {
	step := 100 * 24 * time.Hour / time.Duration(n)
	usd := 0.01
	for k := 0; k < n; k++ {
		start := now.Add(-time.Duration(n-k) * step).Truncate(time.Second)
		id := home.NewRunID(start)
		dir := w.Run(id)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		end := start.Add(time.Minute)
		exit := 0
		r := runs.Record{Format: 1, ID: id, Worker: w.Name, Kind: "heartbeat", Standing: "proactive", StartedAt: start, EndedAt: &end,
			Ended: "done", ExitCode: &exit, Attested: "completed", Report: runs.Report{Status: "complete"},
			Cost: runs.Cost{WallSeconds: 60, CPUSeconds: 2, ModelCalls: 1, InputTokens: 1000, OutputTokens: 200, USD: &usd}}
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if err := os.WriteFile(home.RunJSON(dir), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}
