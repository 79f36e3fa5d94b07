package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/creds"
	"github.com/roster-sh/roster/lib/fakemodel"
	"github.com/roster-sh/roster/lib/runs"
)

// heldUpstream is an Anthropic-style upstream that holds every call until
// release is closed, then answers as an honest provider would: input
// tokens a quarter of the request's bytes, output its max_tokens (200
// without one).
type heldUpstream struct {
	srv              *httptest.Server
	release          chan struct{}
	calls, now, peak atomic.Int64
}

func newHeldUpstream(t *testing.T) *heldUpstream {
	h := &heldUpstream{release: make(chan struct{})}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.calls.Add(1)
		n := h.now.Add(1)
		defer h.now.Add(-1)
		for p := h.peak.Load(); n > p && !h.peak.CompareAndSwap(p, n); p = h.peak.Load() {
		}
		body, _ := io.ReadAll(r.Body)
		var req struct {
			MaxTokens int64 `json:"max_tokens"`
		}
		json.Unmarshal(body, &req)
		if req.MaxTokens == 0 {
			req.MaxTokens = 200
		}
		select {
		case <-h.release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg","type":"message","model":"claude-test","content":[],"usage":{"input_tokens":%d,"output_tokens":%d}}`, len(body)/4, req.MaxTokens)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func heldRig(t *testing.T, h *heldUpstream, b *Budget, inflight int) *rig {
	c := vaultCreds(t, map[string]string{"anthropic": realKey})
	ps := creds.BuiltinProviders()
	p := ps["anthropic"]
	p.Upstream = h.srv.URL
	ps["anthropic"] = p
	return newRig(t, Config{Providers: ps, Granted: []string{"anthropic"}, Creds: c, Budget: b, Inflight: inflight})
}

// The red team's replay: 60 proactive calls held open in parallel, each
// spending ~200 tokens, against a 2,000-token budget. Whatever the
// order they are admitted in, the run spends at most the budget plus one
// call, and the rest are refused budget_spent; never more than the
// inflight bound reach the upstream at once.
func TestHeldCallsSpendNoMoreThanTheBudget(t *testing.T) {
	for _, tc := range []struct {
		name, body string
	}{
		{"no max_tokens", `{"model":"claude-test","messages":[{"role":"user","content":"` + strings.Repeat("p", 300) + `"}]}`},
		{"max_tokens 150", `{"model":"claude-test","max_tokens":150,"messages":[{"role":"user","content":"` + strings.Repeat("p", 300) + `"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHeldUpstream(t)
			r := heldRig(t, h, &Budget{Tokens: 2000}, 0)
			var wg sync.WaitGroup
			var ok, spent atomic.Int64
			for i := 0; i < 60; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp := r.post("/anthropic/v1/messages", tc.body)
					body := readAll(t, resp)
					switch {
					case resp.StatusCode == 200:
						ok.Add(1)
					case resp.Header.Get("X-Roster-Refusal") != runs.RefuseBudgetSpent:
						t.Errorf("%d %s", resp.StatusCode, body)
					}
				}()
			}
			// Let every call reach the gateway while the first are held.
			for h.calls.Load() == 0 {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(300 * time.Millisecond)
			close(h.release)
			wg.Wait()
			var biggest int64
			for _, e := range r.lines() {
				if e.Decision == "allowed" {
					n := e.InputTokens + e.OutputTokens
					spent.Add(n)
					biggest = max(biggest, n)
				}
			}
			if ok.Load() == 0 || spent.Load() > 2000+biggest {
				t.Fatalf("%d calls answered, %d tokens spent (one call: %d) against a 2000-token budget", ok.Load(), spent.Load(), biggest)
			}
			if h.peak.Load() > DefaultInflight {
				t.Fatalf("%d calls at the upstream at once, over the inflight bound %d", h.peak.Load(), DefaultInflight)
			}
			_, u := r.g.Summary()
			if u.InputTokens+u.OutputTokens != spent.Load() {
				t.Fatalf("summary %+v, ledger %d", u, spent.Load())
			}
		})
	}
}

// Owner work has no budget, but its calls still wait for one of the run's
// inflight slots: with inflight = 3, twelve held calls reach the upstream
// three at a time, and all are answered.
func TestInflightBoundsCallsAtOnce(t *testing.T) {
	h := newHeldUpstream(t)
	r := heldRig(t, h, nil, 3)
	var wg sync.WaitGroup
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := r.post("/anthropic/v1/messages", `{"model":"claude-test"}`)
			if body := readAll(t, resp); resp.StatusCode != 200 {
				t.Errorf("%d %s", resp.StatusCode, body)
			}
		}()
	}
	for h.calls.Load() < 3 {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if n := h.calls.Load(); n != 3 {
		t.Fatalf("%d calls reached the upstream with inflight = 3", n)
	}
	close(h.release)
	wg.Wait()
	if h.calls.Load() != 12 || h.peak.Load() != 3 {
		t.Fatalf("calls %d, peak %d", h.calls.Load(), h.peak.Load())
	}
}

// An OpenAI chat-completions stream that does not ask for its usage is
// made to: the upstream receives include_usage (the rest of the body as
// sent), and the call counts what the upstream answered, not zero.
func TestOpenAIStreamGetsIncludeUsage(t *testing.T) {
	script := fakemodel.Script{Turns: []fakemodel.Turn{{Text: "done", InputTokens: 321, OutputTokens: 45}}}
	for _, body := range []string{
		`{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"gpt-test","stream":true,"stream_options":{"include_usage":false,"x":1},"messages":[{"role":"user","content":"hi"}]}`,
	} {
		fm := fakemodel.New(realOAI, script)
		var got []byte
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(strings.NewReader(string(got)))
			fm.ServeHTTP(w, r)
		}))
		c := vaultCreds(t, map[string]string{"openai": realOAI})
		ps := creds.BuiltinProviders()
		p := ps["openai"]
		p.Upstream = srv.URL
		ps["openai"] = p
		r := newRig(t, Config{Providers: ps, Granted: []string{"openai"}, Creds: c})
		resp := r.post("/openai/v1/chat/completions", body)
		if b := readAll(t, resp); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		var sent struct {
			Model         string `json:"model"`
			Stream        bool   `json:"stream"`
			StreamOptions struct {
				IncludeUsage bool `json:"include_usage"`
				X            int  `json:"x"`
			} `json:"stream_options"`
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(got, &sent); err != nil || !sent.StreamOptions.IncludeUsage || sent.Model != "gpt-test" || !sent.Stream || len(sent.Messages) != 1 {
			t.Fatalf("upstream got %s (%v)", got, err)
		}
		if strings.Contains(body, `"x":1`) && sent.StreamOptions.X != 1 {
			t.Fatalf("stream_options lost a field: %s", got)
		}
		e := r.lines()[0]
		if e.InputTokens != 321 || e.OutputTokens != 45 || e.Estimated {
			t.Fatalf("ledger %+v", e)
		}
		srv.Close()
	}
}

// A stream the box cuts before its final usage event is counted by
// estimate, at least what the stream had told, and marked so in the
// ledger and the run's usage.
func TestAbortedStreamIsEstimated(t *testing.T) {
	up := newFakeUpstream(t, realKey)
	up.pause = make(chan struct{})
	c := vaultCreds(t, map[string]string{"anthropic": realKey})
	r := newRig(t, Config{Providers: providers(up, nil, c), Granted: []string{"anthropic"}, Creds: c})
	body := `{"model":"claude-test","stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("q", 3000) + `"}]}`
	resp := r.post("/anthropic/v1/messages", body)
	buf := make([]byte, 64)
	if _, err := io.ReadAtLeast(resp.Body, buf, 10); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // the box goes away mid-stream
	e := r.lines()[0] // (lines closes the gateway, which waits for the call's end)
	close(up.pause)
	if !e.Estimated || e.InputTokens < int64(len(body))/3 || e.OutputTokens < 1 || e.OutputTokens < e.BytesDn/4 {
		t.Fatalf("ledger %+v", e)
	}
	if _, u := r.g.Summary(); !u.Estimated || u.InputTokens != e.InputTokens {
		t.Fatalf("usage %+v", u)
	}
}

// A complete stream is not estimated; a 2xx JSON answer that omits usage
// is.
func TestMissingUsageIsEstimated(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"m","type":"message","model":"claude-test","content":[{"type":"text","text":"`+strings.Repeat("a", 400)+`"}]}`)
	}))
	defer srv.Close()
	r := upstreamRig(t, srv.URL, nil, nil)
	resp := r.post("/anthropic/v1/messages", `{"model":"claude-test","messages":[]}`)
	readAll(t, resp)
	e := r.lines()[0]
	if !e.Estimated || e.OutputTokens != e.BytesDn/4 || e.InputTokens == 0 || e.Model != "claude-test" {
		t.Fatalf("ledger %+v", e)
	}
}

func upstreamRig(t *testing.T, url string, b *Budget, prices map[string]Price) *rig {
	c := vaultCreds(t, map[string]string{"anthropic": realKey})
	ps := creds.BuiltinProviders()
	p := ps["anthropic"]
	p.Upstream = url
	ps["anthropic"] = p
	return newRig(t, Config{Providers: ps, Granted: []string{"anthropic"}, Creds: c, Budget: b, Prices: prices})
}

// Usage is read only from a 2xx JSON or event-stream answer: a 404 page,
// or a text/plain 200, that echoes the request's forged usage counts
// nothing, and spends no budget.
func TestUsageOnlyFromAnswersThatCarryIt(t *testing.T) {
	forged := `{"model":"claude-test","usage":{"input_tokens":999999999,"output_tokens":999999999}}`
	for _, tc := range []struct {
		status int
		ctype  string
	}{{404, "text/plain"}, {404, "application/json"}, {200, "text/plain"}, {500, "application/json"}} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", tc.ctype)
			w.WriteHeader(tc.status)
			w.Write(body)
		}))
		r := upstreamRig(t, srv.URL, &Budget{Tokens: 1000}, nil)
		for i := 0; i < 2; i++ {
			resp := r.post("/anthropic/v1/messages", forged)
			readAll(t, resp)
			if resp.StatusCode != tc.status {
				t.Fatalf("%d %s: call %d answered %d", tc.status, tc.ctype, i, resp.StatusCode)
			}
		}
		for _, e := range r.lines() {
			if e.InputTokens != 0 || e.OutputTokens != 0 || e.Estimated {
				t.Fatalf("%d %s: ledger %+v", tc.status, tc.ctype, e)
			}
		}
		srv.Close()
	}
}

// Under proactive_usd, a call naming a model without a price is refused
// before it goes up; owner work (no budget) is not; a priced model passes.
func TestUnpricedModelUnderMoneyBudget(t *testing.T) {
	up := newFakeUpstream(t, realKey)
	c := vaultCreds(t, map[string]string{"anthropic": realKey})
	prices := map[string]Price{"claude-test": {Input: 1, Output: 1}}
	r := newRig(t, Config{Providers: providers(up, nil, c), Granted: []string{"anthropic"}, Creds: c,
		Prices: prices, Budget: &Budget{USD: 5}})
	for _, body := range []string{`{"model":"claude-opus-9"}`, `{"messages":[]}`, `not json`} {
		resp := r.post("/anthropic/v1/messages", body)
		if resp.Header.Get("X-Roster-Refusal") != runs.RefuseModelUnpriced {
			t.Fatalf("%s: %d %s", body, resp.StatusCode, readAll(t, resp))
		}
		readAll(t, resp)
	}
	if up.calls.Load() != 0 {
		t.Fatalf("an unpriced call reached the upstream")
	}
	resp := r.post("/anthropic/v1/messages", `{"model":"claude-test-20250101"}`)
	if b := readAll(t, resp); resp.StatusCode != 200 {
		t.Fatalf("a priced model: %d %s", resp.StatusCode, b)
	}
	owner := newRig(t, Config{Providers: providers(up, nil, c), Granted: []string{"anthropic"}, Creds: c, Prices: prices})
	resp = owner.post("/anthropic/v1/messages", `{"model":"claude-opus-9"}`)
	if b := readAll(t, resp); resp.StatusCode != 200 {
		t.Fatalf("owner work: %d %s", resp.StatusCode, b)
	}
}

// A request whose top-level keys could be read two ways (the gateway
// takes one model, the upstream another) is refused bad_request.
func TestAmbiguousRequestRefused(t *testing.T) {
	up := newFakeUpstream(t, realKey)
	c := vaultCreds(t, map[string]string{"anthropic": realKey})
	r := newRig(t, Config{Providers: providers(up, nil, c), Granted: []string{"anthropic"}, Creds: c})
	for _, body := range []string{
		`{"model":"claude-test","model":"claude-opus-9"}`,
		`{"model":"claude-test","mod\u0065l":"claude-opus-9"}`,
		`{"max_tokens":10,"max_tokens":100000}`,
	} {
		assertRefusal(t, r.post("/anthropic/v1/messages", body), runs.RefuseBadRequest, creds.StyleAnthropic)
	}
	if up.calls.Load() != 0 {
		t.Fatal("an ambiguous request reached the upstream")
	}
	// The same keys nested are not top-level, and pass.
	resp := r.post("/anthropic/v1/messages", `{"model":"claude-test","metadata":{"model":"a","model":"b"}}`)
	if b := readAll(t, resp); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

func TestReadModelRequest(t *testing.T) {
	for _, tc := range []struct {
		body      string
		model     string
		maxTokens int64
		stream    bool
		usage     bool
	}{
		{`{"model":"m","max_tokens":77,"stream":true}`, "m", 77, true, false},
		{`{"max_output_tokens":5,"model":"r"}`, "r", 5, false, false},
		{`{"max_completion_tokens":9,"stream":false,"stream_options":{"include_usage":true}}`, "", 9, false, true},
		{` { "model" : "sp" , "stream" : true } `, "sp", 0, true, false},
		{`[1,2]`, "", 0, false, false},
		{``, "", 0, false, false},
	} {
		req := httptest.NewRequest("POST", "/anthropic/v1/messages", strings.NewReader(tc.body))
		mr, err := readModelRequest(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		if mr.model != tc.model || mr.maxTokens != tc.maxTokens || mr.stream != tc.stream || mr.includeUsage != tc.usage {
			t.Errorf("%s: %+v", tc.body, mr)
		}
	}
	big := httptest.NewRequest("POST", "/x", io.LimitReader(zeros{}, MaxModelBody+1))
	if _, err := readModelRequest(big); err != errTooLarge {
		t.Fatalf("a body over the bound: %v", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

func FuzzWithUsageOption(f *testing.F) {
	f.Add(`{"model":"m","stream":true}`)
	f.Add(`{"stream":true,"stream_options":{"x":1}}`)
	f.Add(`{}`)
	f.Add(` {"stream":true} `)
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest("POST", "/openai/v1/chat/completions", strings.NewReader(body))
		mr, err := readModelRequest(req)
		if err != nil {
			return
		}
		var before map[string]json.RawMessage
		if json.Unmarshal([]byte(body), &before) != nil {
			return
		}
		out := mr.withUsageOption()
		var after map[string]json.RawMessage
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("%q became invalid JSON %q: %v", body, out, err)
		}
		var o struct {
			IncludeUsage bool `json:"include_usage"`
		}
		if json.Unmarshal(after["stream_options"], &o) != nil || !o.IncludeUsage {
			t.Fatalf("%q: no include_usage in %q", body, out)
		}
		for k, v := range before {
			if k != "stream_options" && string(after[k]) != string(v) && !jsonEqual(after[k], v) {
				t.Fatalf("%q: key %s changed in %q", body, k, out)
			}
		}
	})
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}
