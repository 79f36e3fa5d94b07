package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

func testHome(t *testing.T) home.Home {
	t.Helper()
	h := home.Home{Dir: t.TempDir()}
	if err := os.MkdirAll(h.Worker("dobby").Runs(), 0o755); err != nil {
		t.Fatal(err)
	}
	return h
}

func f64(v float64) *float64 { return &v }

// writeRun makes a run folder with a record and, when given, a ledger.
func writeRun(t *testing.T, h home.Home, r Record, ledger ...LedgerEntry) string {
	t.Helper()
	if r.Worker == "" {
		r.Worker = "dobby"
	}
	dir := h.Worker(r.Worker).Run(r.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if r.StartedAt.IsZero() {
		r.StartedAt, _ = home.RunTime(r.ID)
	}
	if err := WriteRecord(dir, &r); err != nil {
		t.Fatal(err)
	}
	if len(ledger) > 0 {
		var b strings.Builder
		for _, e := range ledger {
			data, _ := json.Marshal(e)
			b.Write(data)
			b.WriteByte('\n')
		}
		if err := os.WriteFile(GatewayLedger(dir), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func ended(id string, c Cost, standing string) Record {
	start, _ := home.RunTime(id)
	end := start.Add(time.Minute)
	return Record{ID: id, Standing: standing, StartedAt: start, EndedAt: &end, Ended: "done", Cost: c}
}

func call(model string, in, out int64, usd *float64) LedgerEntry {
	return LedgerEntry{Kind: "model", Provider: "anthropic", Decision: "allowed", Status: 200, Model: model, InputTokens: in, OutputTokens: out, CostUSD: usd}
}

func TestUsageOfSplitsByModelFromTheLedgerAndKeepsRecordTotals(t *testing.T) {
	h := testHome(t)
	// run.json counts 3 calls; the ledger holds 2 of them (cut at its bound)
	r := ended("2026-11-30-10-00-00-aaaa", Cost{WallSeconds: 60, ModelCalls: 3, InputTokens: 300, OutputTokens: 30, USD: f64(0.5)}, "proactive")
	dir := writeRun(t, h, r, call("m1", 100, 10, f64(0.1)), call("m2", 150, 15, f64(0.3)),
		LedgerEntry{Kind: "model", Decision: "refused", Refusal: RefuseBudgetSpent, Model: "m1"})
	u, err := UsageOf(dir, &r, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if u.Calls != 3 || u.InputTokens != 300 || u.USD == nil || *u.USD != 0.5 || u.Unpriced != 0 {
		t.Fatalf("totals %+v", u.ModelUse)
	}
	if m := u.Models["m1"]; m == nil || m.Calls != 1 || m.InputTokens != 100 {
		t.Fatalf("m1 %+v (a refused call is no call)", m)
	}
	rest := u.Models[UnattributedModel]
	if rest == nil || rest.Calls != 1 || rest.InputTokens != 50 || rest.OutputTokens != 5 || rest.USD == nil || *rest.USD < 0.0999 || *rest.USD > 0.1001 {
		t.Fatalf("unattributed %+v", rest)
	}
}

func TestUsageOfPartlyPricedRunCountsThePricedCalls(t *testing.T) {
	h := testHome(t)
	r := ended("2026-11-30-10-00-00-aaaa", Cost{ModelCalls: 2, InputTokens: 20, OutputTokens: 2}, "proactive")
	dir := writeRun(t, h, r, call("priced", 10, 1, f64(0.25)), call("free", 10, 1, nil))
	u, _ := UsageOf(dir, &r, time.Now())
	if u.USD == nil || *u.USD != 0.25 || u.Unpriced != 1 {
		t.Fatalf("%+v", u.ModelUse)
	}
	// no ledger and no price: every call is unpriced
	r2 := ended("2026-11-30-11-00-00-bbbb", Cost{ModelCalls: 4, InputTokens: 8}, "owner")
	dir2 := writeRun(t, h, r2)
	u2, _ := UsageOf(dir2, &r2, time.Now())
	if u2.USD != nil || u2.Unpriced != 4 || u2.Models[UnattributedModel].Calls != 4 {
		t.Fatalf("%+v %+v", u2.ModelUse, u2.Models)
	}
}

func TestSpentTodayCountsProactiveRunsOfTheLocalDay(t *testing.T) {
	h := testHome(t)
	loc := time.FixedZone("UTC+10", 10*3600)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) // 22:00 local; the local day began 2026-11-29 14:00 UTC
	// yesterday UTC but today locally: counts
	writeRun(t, h, ended("2026-11-29-15-00-00-aaaa", Cost{ModelCalls: 1, InputTokens: 100, OutputTokens: 10, CacheReadTokens: 999, USD: f64(1)}, "proactive"))
	// before the local day: does not count
	writeRun(t, h, ended("2026-11-29-13-59-59-bbbb", Cost{ModelCalls: 1, InputTokens: 1000, USD: f64(10)}, "proactive"))
	// claimed just before the day began, started in it: counts (its start decides)
	late := ended("2026-11-29-13-59-30-gggg", Cost{ModelCalls: 1, InputTokens: 3, OutputTokens: 3, USD: f64(0.25)}, "proactive")
	late.StartedAt = time.Date(2026, 11, 29, 14, 0, 5, 0, time.UTC)
	writeRun(t, h, late)
	// owner standing never counts
	writeRun(t, h, ended("2026-11-30-09-00-00-cccc", Cost{ModelCalls: 1, InputTokens: 5000, USD: f64(50)}, "owner"))
	// a live proactive run counts its ledger so far
	start := time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	writeRun(t, h, Record{ID: "2026-11-30-11-00-00-dddd", Standing: "proactive", StartedAt: start},
		call("m", 7, 3, f64(0.5)), call("m", 10, 0, nil))
	// an ended, partly priced run: its record's tokens, its ledger's priced calls
	writeRun(t, h, ended("2026-11-30-10-00-00-ffff", Cost{ModelCalls: 2, InputTokens: 40, OutputTokens: 4}, "proactive"),
		call("priced", 20, 2, f64(0.25)), call("free", 20, 2, nil))
	// an unreadable record is left out, never an error
	bad := h.Worker("dobby").Run("2026-11-30-11-30-00-eeee")
	os.MkdirAll(bad, 0o755)
	os.WriteFile(filepath.Join(bad, "run.json"), []byte("{"), 0o644)

	tokens, usd, err := SpentToday(h, "dobby", now, loc)
	if err != nil {
		t.Fatal(err)
	}
	if tokens != 110+20+44+6 || usd != 2 {
		t.Fatalf("tokens %d usd %v, want 180 and 2", tokens, usd)
	}
	// a worker without runs has spent nothing
	if tokens, usd, err := SpentToday(h, "nobody", now, loc); err != nil || tokens != 0 || usd != 0 {
		t.Fatalf("no runs: %d %v %v", tokens, usd, err)
	}
}

func TestUsageIndexIsBuiltReusedAndCheckedAgainstTheRecords(t *testing.T) {
	h := testHome(t)
	w := h.Worker("dobby")
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	writeRun(t, h, ended("2026-11-29-10-00-00-aaaa", Cost{WallSeconds: 60, ModelCalls: 1, InputTokens: 10}, "proactive"), call("m", 10, 0, nil))
	dir := writeRun(t, h, ended("2026-11-30-10-00-00-bbbb", Cost{WallSeconds: 30, ModelCalls: 2, InputTokens: 20}, "owner"))

	rows, probs, err := WorkerUsage(w, time.Time{}, now)
	if err != nil || len(probs) != 0 || len(rows) != 2 {
		t.Fatalf("first: %d rows, %v, %v", len(rows), probs, err)
	}
	for _, day := range []string{"2026-11-29", "2026-11-30"} {
		if _, err := os.Stat(w.UsageDay(day)); err != nil {
			t.Fatalf("index of %s not written: %v", day, err)
		}
	}

	// the record is replaced (a reap, an edit): its row is recomputed
	r, _ := ReadRecord(dir)
	r.Cost.InputTokens = 99
	time.Sleep(10 * time.Millisecond) // a new mtime even on coarse clocks; the inode changes anyway
	if err := WriteRecord(dir, r); err != nil {
		t.Fatal(err)
	}
	rows, _, _ = WorkerUsage(w, time.Time{}, now)
	if rows[1].InputTokens != 99 {
		t.Fatalf("stale row used: %+v", rows[1])
	}

	// a pruned run stays in the index
	if err := os.RemoveAll(w.Run("2026-11-29-10-00-00-aaaa")); err != nil {
		t.Fatal(err)
	}
	rows, _, _ = WorkerUsage(w, time.Time{}, now)
	if len(rows) != 2 || rows[0].ID != "2026-11-29-10-00-00-aaaa" || rows[0].Models["m"].Calls != 1 {
		t.Fatalf("pruned run's row lost: %+v", rows)
	}

	// --since skips older days
	rows, _, _ = WorkerUsage(w, time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), now)
	if len(rows) != 1 || rows[0].ID != "2026-11-30-10-00-00-bbbb" {
		t.Fatalf("since: %+v", rows)
	}
}

func TestUsageIndexUnreadableIsSetAsideAndRebuilt(t *testing.T) {
	h := testHome(t)
	w := h.Worker("dobby")
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	writeRun(t, h, ended("2026-11-30-10-00-00-bbbb", Cost{WallSeconds: 30, ModelCalls: 2, InputTokens: 20}, "owner"))
	for _, bad := range []string{
		"{not json",
		`{"format":2,"day":"2026-11-30","runs":[]}`,
		`{"format":1,"day":"2026-11-29","runs":[]}`,
		`{"format":1,"day":"2026-11-30","runs":[{"id":"2026-11-29-10-00-00-aaaa","stat":{}}]}`,
		`{"format":1,"day":"2026-11-30","runs":[{"id":"2026-11-30-10-00-00-bbbb","stat":{},"input_tokens":-1}]}`,
		`{"format":1,"day":"2026-11-30","runs":[]} trailing`,
	} {
		os.MkdirAll(w.Usage(), 0o755)
		if err := os.WriteFile(w.UsageDay("2026-11-30"), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		rows, probs, err := WorkerUsage(w, time.Time{}, now)
		if err != nil || len(rows) != 1 || rows[0].InputTokens != 20 {
			t.Fatalf("%s: rows %+v, %v", bad, rows, err)
		}
		if len(probs) != 1 || !strings.Contains(probs[0].Error(), "rebuilt from the run records") || !strings.Contains(probs[0].Error(), ".bad-") {
			t.Fatalf("%s: problems %v", bad, probs)
		}
		if _, err := readUsageDay(w.UsageDay("2026-11-30"), "2026-11-30"); err != nil {
			t.Fatalf("%s: not rebuilt: %v", bad, err)
		}
		kept, _ := filepath.Glob(w.UsageDay("2026-11-30") + ".bad-*")
		if len(kept) == 0 {
			t.Fatalf("%s: the bad file was not kept", bad)
		}
		for _, k := range kept {
			os.Remove(k)
		}
	}
}

func TestSumUsageByDayWorkerModel(t *testing.T) {
	loc := time.FixedZone("X", -5*3600)
	a := RunUsage{ID: "a", StartedAt: time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC), WallSeconds: 10, CPUSeconds: 1,
		ModelUse: ModelUse{Calls: 2, InputTokens: 20, USD: f64(1)},
		Models:   map[string]*ModelUse{"m1": {Calls: 2, InputTokens: 20, USD: f64(1)}}}
	b := RunUsage{ID: "b", StartedAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), WallSeconds: 5,
		ModelUse: ModelUse{Calls: 1, InputTokens: 5, Unpriced: 1},
		Models:   map[string]*ModelUse{"m1": {Calls: 1, InputTokens: 5, Unpriced: 1}}}
	ws := []WorkerRuns{{"dobby", []RunUsage{a}}, {"kreacher", []RunUsage{b}}}
	days, _ := SumUsage(ws, ByDay, loc)
	if len(days) != 2 || days[0].Day != "2026-11-29" || days[1].Day != "2026-11-30" || *days[0].BoxSeconds != 10 {
		t.Fatalf("by day in the zone: %+v", days)
	}
	models, _ := SumUsage(ws, ByModel, loc)
	if len(models) != 1 || models[0].Runs != 2 || models[0].Calls != 3 || *models[0].USD != 1 || models[0].Unpriced != 1 || models[0].BoxSeconds != nil {
		t.Fatalf("by model: %+v", models)
	}
	workers, _ := SumUsage(ws, ByWorker, loc)
	if len(workers) != 2 || workers[1].Worker != "kreacher" || workers[1].USD != nil {
		t.Fatalf("by worker: %+v", workers)
	}
	if _, err := SumUsage(ws, "hour", loc); err == nil {
		t.Fatal("--by hour accepted")
	}
}

func FuzzReadUsageDay(f *testing.F) {
	f.Add([]byte(`{"format":1,"day":"2026-11-30","runs":[{"id":"2026-11-30-10-00-00-bbbb","started_at":"2026-11-30T10:00:00Z","wall_seconds":1,"cpu_seconds":1,"model_calls":1,"input_tokens":1,"output_tokens":1,"cache_read_tokens":0,"cache_write_tokens":0,"models":{"m":{"model_calls":1,"input_tokens":1,"output_tokens":1,"cache_read_tokens":0,"cache_write_tokens":0}},"stat":{"ino":1,"size":2,"mtime_ns":3}}]}`))
	f.Add([]byte(`{"format":1,"day":"2026-11-30","runs":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "2026-11-30.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		rows, err := readUsageDay(path, "2026-11-30")
		if err != nil {
			return
		}
		for id, u := range rows {
			if id != u.ID || !strings.HasPrefix(id, "2026-11-30-") || u.Stat == nil || !validUse(u.ModelUse) {
				t.Fatalf("accepted a bad row %+v", u)
			}
		}
	})
}

func TestUsageOfLostRunCountsItsCallsNotTimeUntilNow(t *testing.T) {
	h := testHome(t)
	start := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	r := Record{ID: "2026-11-20-10-00-00-aaaa", Standing: "proactive", StartedAt: start}
	dir := writeRun(t, h, r, call("m", 5, 5, nil))
	// box.json names a process that is gone: the run is lost, not live
	if err := os.WriteFile(filepath.Join(dir, "box.json"), []byte(`{"format":1,"pid":999999999,"start_ticks":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if !Finished(dir) {
		t.Fatal("setup: Finished does not see a run whose supervisor is gone as over")
	}
	u, _ := UsageOf(dir, &r, start.Add(240*time.Hour))
	if u.Live || u.WallSeconds != 0 || u.Calls != 1 || u.InputTokens != 5 {
		t.Fatalf("lost run: %+v", u)
	}
}

func TestUsageIndexConcurrentReadersAgree(t *testing.T) {
	h := testHome(t)
	w := h.Worker("dobby")
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 40; i++ {
		id := fmt.Sprintf("2026-11-%02d-10-00-00-%04d", 1+i%28, i)
		writeRun(t, h, ended(id, Cost{WallSeconds: 1, ModelCalls: 1, InputTokens: int64(i)}, "proactive"), call("m", int64(i), 0, f64(0.01)))
	}
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rows, probs, err := WorkerUsage(w, time.Time{}, now)
			switch {
			case err != nil:
				errc <- err
			case len(rows) != 40:
				errc <- fmt.Errorf("%d rows, want 40", len(rows))
			case len(probs) > 0 && !strings.Contains(probs[0].Error(), "not updated"):
				errc <- fmt.Errorf("problems %v", probs)
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	// every index file parses and, together, they hold every run once
	n := 0
	files, _ := filepath.Glob(filepath.Join(w.Usage(), "*.json"))
	for _, f := range files {
		rows, err := readUsageDay(f, strings.TrimSuffix(filepath.Base(f), ".json"))
		if err != nil {
			t.Fatal(err)
		}
		n += len(rows)
	}
	if n != 40 {
		t.Fatalf("the index holds %d rows, want 40", n)
	}
}

func TestPruneIndexesUsageBeforeDeletingRuns(t *testing.T) {
	h := testHome(t)
	w := h.Worker("dobby")
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i, id := range []string{"2026-11-28-10-00-00-aaaa", "2026-11-29-10-00-00-bbbb", "2026-11-30-10-00-00-cccc"} {
		writeRun(t, h, ended(id, Cost{WallSeconds: 10, ModelCalls: 1, InputTokens: int64(100 * (i + 1))}, "proactive"), call("m", int64(100*(i+1)), 0, nil))
	}

	// the index cannot be updated (its lock held): nothing is deleted
	lock, err := fsx.LockPath(context.Background(), filepath.Join(testMkdir(t, w.Usage()), ".lock"), false, 0)
	if err != nil {
		t.Fatal(err)
	}
	pruned, problems := Prune(h, PruneOptions{Keep: 1, Now: now})
	lock.Unlock()
	if len(pruned) != 0 || len(problems) != 1 || !errors.Is(problems[0], errs.ErrBusy) {
		t.Fatalf("with the index locked: pruned %v, problems %v", pruned, problems)
	}
	if ids, _ := IDs(w); len(ids) != 3 {
		t.Fatalf("runs deleted without their usage indexed: %v", ids)
	}

	pruned, problems = Prune(h, PruneOptions{Keep: 1, Now: now})
	if len(pruned) != 2 || len(problems) != 0 {
		t.Fatalf("pruned %v, problems %v", pruned, problems)
	}
	rows, _, err := WorkerUsage(w, time.Time{}, now)
	if err != nil || len(rows) != 3 || rows[0].InputTokens != 100 || rows[1].Models["m"].InputTokens != 200 {
		t.Fatalf("usage after prune: %+v, %v", rows, err)
	}
}

func testMkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
