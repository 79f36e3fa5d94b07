package gateway

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/runs"
)

// checkLedgerLine: appendEntry writes what json.Marshal writes.
func checkLedgerLine(t *testing.T, e runs.LedgerEntry) {
	t.Helper()
	want, err := json.Marshal(e)
	got := appendEntry(nil, &e)
	if err != nil {
		// json.Marshal refuses only a cost that is not a number: the
		// line is written without it.
		c := e
		c.CostUSD = nil
		if want, err = json.Marshal(c); err != nil {
			t.Fatalf("%+v: %v", e, err)
		}
	}
	if string(got) != string(want) {
		t.Fatalf("appendEntry\n %s\njson.Marshal\n %s", got, want)
	}
}

// Every field of runs.LedgerEntry is written, as encoding/json writes it:
// a field added to the entry and not to appendEntry fails here.
func TestLedgerLineIsEncodingJSONs(t *testing.T) {
	full := runs.LedgerEntry{}
	v := reflect.ValueOf(&full).Elem()
	for i := 0; i < v.NumField(); i++ {
		switch f := v.Field(i); f.Kind() {
		case reflect.String:
			f.SetString("v" + v.Type().Field(i).Name)
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(1000 + i))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
			f.Elem().SetFloat(0.000123)
		case reflect.Struct:
			f.Set(reflect.ValueOf(time.Date(2026, 12, 1, 12, 0, 0, 123456789, time.UTC)))
		case reflect.Slice: // Refs
			f.Set(reflect.ValueOf([]runs.GitRef{{Ref: "refs/heads/x\"", Old: "o", New: "n", Outcome: "pushed"},
				{Repo: "app", Ref: "r", Old: "o", New: "n", Outcome: "refused", Refusal: "secret"}}))
		default:
			t.Fatalf("field %s of kind %s: teach appendEntry and this test", v.Type().Field(i).Name, f.Kind())
		}
	}
	checkLedgerLine(t, full)
	checkLedgerLine(t, runs.LedgerEntry{})
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, s := range []string{"", "a<b>&c", "quote\"back\\slash", "tab\tnl\n\x01\x7f", "é\u2028\u2029", "\xff\xfe", strings.Repeat("x", 300)} {
		checkLedgerLine(t, runs.LedgerEntry{At: at, Kind: "model", Path: s, Model: s, RequestID: s, Method: s, Host: s})
	}
	for _, c := range []float64{0, 1, -1, 1e-7, 1e-6, 123456.789, 1e20, 1e21, 3e-310, math.MaxFloat64, math.NaN(), math.Inf(1)} {
		checkLedgerLine(t, runs.LedgerEntry{At: at, CostUSD: &c})
	}
	for _, at := range []time.Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 5*3600+1800))} {
		e := runs.LedgerEntry{At: at}
		if _, err := json.Marshal(e); err == nil {
			checkLedgerLine(t, e)
		} else if got := appendEntry(nil, &e); len(got) != 0 {
			t.Fatalf("%v: %s", at, got)
		}
	}
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { appendEntry(buf[:0], &full) }); n != 0 {
		t.Errorf("a line costs %v allocations", n)
	}
}

// FuzzLedgerLine: appendEntry agrees with json.Marshal on every string,
// number and cost.
func FuzzLedgerLine(f *testing.F) {
	f.Add("/v1/messages", "claude-sonnet-4-5", "req_<1>", int64(12), 0.0123, int64(1764590000123456789))
	f.Add("\xff\"\\\u2028", "", "", int64(-1), 1e-9, int64(0))
	f.Fuzz(func(t *testing.T, path, model, reqID string, n int64, cost float64, at int64) {
		checkLedgerLine(t, runs.LedgerEntry{Seq: n, At: time.Unix(0, at).UTC(), Kind: "model", Provider: model, Method: path,
			Host: reqID, Port: int(n % 65536), Path: path, Decision: "allowed", Refusal: reqID, Status: int(n % 600),
			BytesUp: n, BytesDn: -n, MS: n / 3, Model: model, InputTokens: n, OutputTokens: n + 1, CacheReadTokens: n - 1,
			CacheWriteTokens: n * 2, CostUSD: &cost, RequestID: reqID, Dropped: n})
	})
}

// Lines added from many goroutines come out whole, in seq order, each
// once, and the writer keeps up however the adds interleave with it.
func TestLedgerGroupCommit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "gateway.jsonl")
	l, err := openLedger(p, 0, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				l.add(runs.LedgerEntry{At: time.Now().UTC(), Kind: "model", Path: strings.Repeat("p", i%300), Decision: "allowed"})
			}
		}()
	}
	wg.Wait()
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	l.add(runs.LedgerEntry{Kind: "after close"})
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 4000 {
		t.Fatalf("%d lines", len(lines))
	}
	for i, line := range lines {
		var e runs.LedgerEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.Seq != int64(i+1) {
			t.Fatalf("line %d: %v %.80s", i+1, err, line)
		}
	}
}
