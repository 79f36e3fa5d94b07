package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/creds"
	"github.com/roster-sh/roster/lib/runs"
)

const (
	realKey   = "sk-ant-api03-REAL-SECRET-do-not-leak"
	realOAuth = "sk-ant-oat01-REAL-OAUTH-do-not-leak"
	realOAI   = "sk-proj-REAL-OPENAI-do-not-leak"
)

func vaultCreds(t *testing.T, keys map[string]string) creds.Creds {
	c := testCreds(t, nil)
	for p, k := range keys {
		if err := creds.PutVault(c.VaultDir, p, strings.NewReader(k+"\n")); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func assertNoSecret(t *testing.T, path string, secrets ...string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if strings.Contains(string(data), s) {
			t.Fatalf("%s holds a credential", path)
		}
	}
	for _, s := range []string{"placeholder", "box-made-up", "session=box", `"stream"`, "Hello"} {
		if strings.Contains(string(data), s) {
			t.Fatalf("%s holds a header value or body (%q)", path, s)
		}
	}
}

func TestModelRouteInjectsAPIKey(t *testing.T) {
	up := newFakeUpstream(t, realKey)
	c := vaultCreds(t, map[string]string{"anthropic": realKey})
	r := newRig(t, Config{Providers: providers(up, nil, c), Granted: []string{"anthropic"}, Creds: c,
		Prices: map[string]Price{"claude-test": {Input: 3, Output: 15}}})

	resp := r.post("/anthropic/v1/messages?beta=true", `{"model":"claude-test","max_tokens":10}`)
	body := readAll(t, resp)
	if resp.StatusCode != 200 || !strings.Contains(body, `"usage"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	h := up.lastHeader()
	if h.Get("X-Api-Key") != realKey || h.Get("Authorization") != "" || h.Get("Cookie") != "" {
		t.Fatalf("upstream headers: x-api-key set=%v authorization=%q cookie=%q", h.Get("X-Api-Key") == realKey, h.Get("Authorization"), h.Get("Cookie"))
	}
	if h.Get("Anthropic-Beta") != "fine-grained-tool-streaming-2025-05-14" {
		t.Fatalf("anthropic-beta = %q", h.Get("Anthropic-Beta"))
	}
	if up.paths[0] != "/v1/messages?beta=true" {
		t.Fatalf("upstream path %q", up.paths[0])
	}
	ls := r.lines()
	if len(ls) != 1 {
		t.Fatalf("ledger %+v", ls)
	}
	e := ls[0]
	if e.Kind != "model" || e.Provider != "anthropic" || e.Decision != "allowed" || e.Status != 200 || e.Path != "/v1/messages" ||
		e.Model != "claude-test-20250101" || e.InputTokens != 10 || e.OutputTokens != 5 || e.RequestID != "req_ant_1" ||
		e.Host != "127.0.0.1" || e.BytesUp == 0 || e.BytesDn == 0 || e.CostUSD == nil {
		t.Fatalf("ledger line %+v", e)
	}
	if want := (10*3.0 + 5*15.0) / 1e6; *e.CostUSD != want {
		t.Fatalf("cost %v, want %v", *e.CostUSD, want)
	}
	assertNoSecret(t, r.ledger, realKey)
	sum, u := r.g.Summary()
	if sum.Requests != 1 || sum.Refused != 0 || u.ModelCalls != 1 || u.InputTokens != 10 || u.OutputTokens != 5 || u.USD == nil {
		t.Fatalf("summary %+v usage %+v", sum, u)
	}
}

func TestModelRouteInjectsOAuthToken(t *testing.T) {
	up := newFakeUpstream(t, realOAuth)
	up.setKey(realOAuth, true)
	c := testCreds(t, nil)
	writePi(t, c, fmt.Sprintf(`{"anthropic":{"type":"oauth","access":%q,"refresh":"rt","expires":%d}}`, realOAuth, time.Now().Add(time.Hour).UnixMilli()))
	r := newRig(t, Config{Providers: providers(up, nil, c), Granted: []string{"anthropic"}, Creds: c})

	resp := r.post("/anthropic/v1/messages", `{"model":"claude-test"}`)
	if body := readAll(t, resp); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	h := up.lastHeader()
	if h.Get("Authorization") != "Bearer "+realOAuth || h.Get("X-Api-Key") != "" {
		t.Fatal("OAuth token not injected as Bearer alone")
	}
	if b := h.Get("Anthropic-Beta"); b != "fine-grained-tool-streaming-2025-05-14,oauth-2025-04-20" {
		t.Fatalf("anthropic-beta = %q", b)
	}
	assertNoSecret(t, r.ledger, realOAuth)
}

func TestAPIKeyInjectionDropsTheOAuthBeta(t *testing.T) {
	up := newFakeUpstream(t, realKey)
	c := vaultCreds(t, map[string]string{"anthropic": realKey})
	r := newRig(t, Config{Providers: providers(up, nil, c), Granted: []string{"anthropic"}, Creds: c})
	req, _ := http.NewRequest("POST", "http://gateway/anthropic/v1/messages", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+Placeholder(creds.BuiltinProviders()["anthropic"], true))
	req.Header.Set("Anthropic-Beta", "claude-code-20250219,oauth-2025-04-20")
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if b := up.lastHeader().Get("Anthropic-Beta"); b != "claude-code-20250219" || resp.StatusCode != 200 {
		t.Fatalf("%d anthropic-beta %q", resp.StatusCode, b)
	}
}

// A stream paused upstream reaches the client in pieces: the first events
// are read while the upstream is still holding the rest.
func TestStreamArrivesUnbuffered(t *testing.T) {
	for _, style := range []string{creds.StyleAnthropic, creds.StyleOpenAI} {
		t.Run(style, func(t *testing.T) {
			key := realKey
			path, body, firstText := "/anthropic/v1/messages", `{"model":"m","stream":true}`, `"text":"Hello"`
			if style == creds.StyleOpenAI {
				key, path, firstText = realOAI, "/openai/v1/chat/completions", `"content":"Hello"`
			}
			up := newFakeUpstream(t, key)
			up.pause = make(chan struct{})
			c := vaultCreds(t, map[string]string{"anthropic": realKey, "openai": realOAI})
			r := newRig(t, Config{Providers: providers(up, up, c), Granted: []string{"anthropic", "openai"}, Creds: c})

			resp := r.post(path, body)
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			br := bufio.NewReader(resp.Body)
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("stream ended before its first piece: %v", err)
				}
				if strings.Contains(line, firstText) {
					break // arrived while the upstream holds the rest
				}
			}
			close(up.pause)
			rest, _ := io.ReadAll(br)
			resp.Body.Close()
			if !strings.Contains(string(rest), `world`) {
				t.Fatalf("rest of stream: %q", rest)
			}
			ls := r.lines()
			e := ls[len(ls)-1]
			if style == creds.StyleAnthropic {
				if e.InputTokens != 25 || e.OutputTokens != 15 || e.CacheReadTokens != 7 || e.CacheWriteTokens != 3 || e.Model != "claude-test-20250101" {
					t.Fatalf("anthropic stream usage %+v", e)
				}
			} else if e.InputTokens != 20 || e.OutputTokens != 9 || e.CacheReadTokens != 10 || e.Model != "gpt-test" || e.RequestID != "req_oai_1" {
				t.Fatalf("openai stream usage %+v", e)
			}
			if e.CostUSD != nil {
				t.Fatal("unpriced model got a cost")
			}
			if _, u := r.g.Summary(); u.USD != nil || u.ModelCalls != 1 {
				t.Fatalf("usage %+v", u)
			}
			assertNoSecret(t, r.ledger, key)
		})
	}
}

// Usage after megabytes of content is found without buffering the body.
func TestLargeJSONBodyUsage(t *testing.T) {
	up := newFakeUpstream(t, realOAI)
	up.bigPad = 3 << 20
	c := vaultCreds(t, map[string]string{"openai": realOAI})
	r := newRig(t, Config{Providers: providers(nil, up, c), Granted: []string{"openai"}, Creds: c})
	resp := r.post("/openai/v1/chat/completions", `{"model":"gpt-test"}`)
	body := readAll(t, resp)
	if resp.StatusCode != 200 || len(body) < 3<<20 {
		t.Fatalf("%d %d bytes", resp.StatusCode, len(body))
	}
	e := r.lines()[0]
	if e.InputTokens != 12 || e.OutputTokens != 4 || e.Model != "gpt-test" || e.BytesDn != int64(len(body)) {
		t.Fatalf("usage %+v", e)
	}
}

func TestRefusalProviderNotGranted(t *testing.T) {
	up := newFakeUpstream(t, realOAI)
	c := vaultCreds(t, map[string]string{"openai": realOAI})
	r := newRig(t, Config{Providers: providers(nil, up, c), Granted: []string{"anthropic"}, Creds: c})
	assertRefusal(t, r.post("/openai/v1/chat/completions", `{}`), runs.RefuseProviderNotGranted, creds.StyleOpenAI)
	if up.calls.Load() != 0 {
		t.Fatal("upstream was called")
	}
	e := r.lines()[0]
	if e.Decision != "refused" || e.Refusal != runs.RefuseProviderNotGranted || e.Status != 403 || e.Kind != "model" || e.Provider != "openai" {
		t.Fatalf("%+v", e)
	}
	sum, _ := r.g.Summary()
	if sum.Refused != 1 || sum.Refusals[runs.RefuseProviderNotGranted] != 1 || sum.LastRefusal.Target != "/openai" {
		t.Fatalf("%+v", sum)
	}
}

func TestRefusalNoCredential(t *testing.T) {
	up := newFakeUpstream(t, realKey)
	c := testCreds(t, nil)
	r := newRig(t, Config{Providers: providers(up, nil, c), Granted: []string{"anthropic"}, Creds: c})
	assertRefusal(t, r.post("/anthropic/v1/messages", `{}`), runs.RefuseNoCredential, creds.StyleAnthropic)
	if up.calls.Load() != 0 {
		t.Fatal("upstream was called")
	}
}

func TestRefusalCredentialExpired(t *testing.T) {
	up := newFakeUpstream(t, realOAuth)
	c := testCreds(t, nil)
	writePi(t, c, fmt.Sprintf(`{"anthropic":{"type":"oauth","access":%q,"refresh":"rt","expires":%d}}`, realOAuth, time.Now().Add(-time.Minute).UnixMilli()))
	r := newRig(t, Config{Providers: providers(up, nil, c), Granted: []string{"anthropic"}, Creds: c})
	resp := r.post("/anthropic/v1/messages", `{}`)
	assertRefusal(t, resp, runs.RefuseCredentialExpired, creds.StyleAnthropic)
	if up.calls.Load() != 0 {
		t.Fatal("upstream was called")
	}
}

func TestRefusalCredentialRejectedPassesUpstreamAnswer(t *testing.T) {
	up := newFakeUpstream(t, "sk-ant-the-upstream-wants-another")
	c := vaultCreds(t, map[string]string{"anthropic": realKey})
	r := newRig(t, Config{Providers: providers(up, nil, c), Granted: []string{"anthropic"}, Creds: c})
	resp := r.post("/anthropic/v1/messages", `{}`)
	body := readAll(t, resp)
	if resp.StatusCode != 401 || !strings.Contains(body, "authentication_error") || resp.Header.Get("X-Roster-Refusal") != runs.RefuseCredentialRejected {
		t.Fatalf("%d %q %s", resp.StatusCode, resp.Header.Get("X-Roster-Refusal"), body)
	}
	e := r.lines()[0]
	if e.Decision != "refused" || e.Refusal != runs.RefuseCredentialRejected || e.Status != 401 {
		t.Fatalf("%+v", e)
	}
	if sum, _ := r.g.Summary(); sum.Refusals[runs.RefuseCredentialRejected] != 1 {
		t.Fatalf("%+v", sum)
	}
}

func TestRefusalBadRequest(t *testing.T) {
	r := newRig(t, Config{Providers: creds.BuiltinProviders()})
	for _, path := range []string{"/", "/nosuchprovider/v1", "/anthropicx/v1"} {
		resp, err := r.client.Get("http://gateway" + path)
		if err != nil {
			t.Fatal(err)
		}
		assertRefusal(t, resp, runs.RefuseBadRequest, "")
	}
	c := vaultCreds(t, map[string]string{"anthropic": realKey})
	r2 := newRig(t, Config{Providers: providers(nil, nil, c), Granted: []string{"anthropic"}, Creds: c})
	for _, path := range []string{"/anthropic/../openai/v1", "/anthropic/v1/%2e%2e/x"} {
		conn := r2.dial()
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: g\r\nContent-Length: 0\r\n\r\n", path)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		assertRefusal(t, resp, runs.RefuseBadRequest, creds.StyleAnthropic)
		conn.Close()
	}
	if sum, _ := r.g.Summary(); sum.LastRefusal.Target != "/anthropicx/v1" {
		t.Fatalf("%+v", sum.LastRefusal)
	}
	for _, e := range r.lines() {
		if e.Refusal != runs.RefuseBadRequest || e.Kind != "" || e.Host != "" {
			t.Fatalf("%+v", e)
		}
	}
}

// Budget: a proactive run whose worker reaches its day's tokens is refused
// from the next call on, counting this run's own calls.
func TestBudgetSpentAfterTwoCalls(t *testing.T) {
	up := newFakeUpstream(t, realKey)
	c := vaultCreds(t, map[string]string{"anthropic": realKey})
	// Spent earlier today: 10; each call costs 15 (10 in + 5 out); limit 40.
	r := newRig(t, Config{Providers: providers(up, nil, c), Granted: []string{"anthropic"}, Creds: c,
		Budget: &Budget{Tokens: 40, SpentTokens: 10}})
	for i := 0; i < 2; i++ {
		resp := r.post("/anthropic/v1/messages", `{}`)
		if body := readAll(t, resp); resp.StatusCode != 200 {
			t.Fatalf("call %d: %d %s", i+1, resp.StatusCode, body)
		}
	}
	assertRefusal(t, r.post("/anthropic/v1/messages", `{}`), runs.RefuseBudgetSpent, creds.StyleAnthropic)
	if up.calls.Load() != 2 {
		t.Fatalf("upstream calls %d", up.calls.Load())
	}
}

func TestBudgetUSD(t *testing.T) {
	up := newFakeUpstream(t, realKey)
	c := vaultCreds(t, map[string]string{"anthropic": realKey})
	// One call: 10*1e5 + 5*1e5 per million = $1.5; 0.5 spent; limit 2.
	r := newRig(t, Config{Providers: providers(up, nil, c), Granted: []string{"anthropic"}, Creds: c,
		Prices: map[string]Price{"claude-test": {Input: 1e5, Output: 1e5}},
		Budget: &Budget{USD: 2, SpentUSD: 0.5}})
	resp := r.post("/anthropic/v1/messages", `{"model":"claude-test"}`)
	readAll(t, resp)
	if resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	assertRefusal(t, r.post("/anthropic/v1/messages", `{"model":"claude-test"}`), runs.RefuseBudgetSpent, creds.StyleAnthropic)
}

// A rotated key is used at the next request; a removed one is refused at
// once.
func TestCredentialRotation(t *testing.T) {
	up := newFakeUpstream(t, "sk-ant-one")
	c := vaultCreds(t, map[string]string{"anthropic": "sk-ant-one"})
	r := newRig(t, Config{Providers: providers(up, nil, c), Granted: []string{"anthropic"}, Creds: c})
	resp := r.post("/anthropic/v1/messages", `{}`)
	if readAll(t, resp); resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	up.setKey("sk-ant-two", false)
	if err := creds.PutVault(c.VaultDir, "anthropic", strings.NewReader("sk-ant-two")); err != nil {
		t.Fatal(err)
	}
	resp = r.post("/anthropic/v1/messages", `{}`)
	if readAll(t, resp); resp.StatusCode != 200 {
		t.Fatalf("rotated key not used: %d", resp.StatusCode)
	}
	if err := creds.RemoveVault(c.VaultDir, "anthropic"); err != nil {
		t.Fatal(err)
	}
	assertRefusal(t, r.post("/anthropic/v1/messages", `{}`), runs.RefuseNoCredential, creds.StyleAnthropic)
	assertNoSecret(t, r.ledger, "sk-ant-one", "sk-ant-two")
}

func TestUpstreamUnreachableIs502(t *testing.T) {
	c := vaultCreds(t, map[string]string{"anthropic": realKey})
	ps := providers(nil, nil, c)
	r := newRig(t, Config{Providers: ps, Granted: []string{"anthropic"}, Creds: c})
	resp := r.post("/anthropic/v1/messages", `{}`)
	body := readAll(t, resp)
	if resp.StatusCode != 502 || !strings.Contains(body, `"type":"error"`) || resp.Header.Get("X-Roster-Refusal") != "" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if e := r.lines()[0]; e.Status != 502 || e.Decision != "allowed" {
		t.Fatalf("%+v", e)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"bad allow":         {Providers: creds.BuiltinProviders(), Allow: []string{"forge.example", "http://x"}},
		"unknown provider":  {Providers: creds.BuiltinProviders(), Granted: []string{"gemini"}},
		"bad upstream":      {Providers: map[string]creds.Provider{"x": {Name: "x", Style: "openai", Upstream: "ftp://h"}}},
		"bad style":         {Providers: map[string]creds.Provider{"x": {Name: "x", Style: "grpc", Upstream: "http://h"}}},
		"bad source":        {Providers: map[string]creds.Provider{"x": {Name: "x", Style: "openai", Upstream: "http://h", Credentials: []string{"keychain"}}}},
		"bad provider name": {Providers: map[string]creds.Provider{"a/b": {Name: "a/b", Style: "openai", Upstream: "http://h"}}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		} else if name == "bad allow" && !strings.Contains(err.Error(), `"http://x"`) {
			t.Errorf("bad allow: error does not name the entry: %v", err)
		}
	}
}

// A client that sends even its loopback requests through HTTP_PROXY names
// the gateway by the relay's address in an absolute URI: served as the
// route, not refused as an IP literal.
func TestAbsoluteURIToTheGatewayItselfIsARoute(t *testing.T) {
	up := newFakeUpstream(t, realKey)
	c := vaultCreds(t, map[string]string{"anthropic": realKey})
	r := newRig(t, Config{Providers: providers(up, nil, c), Granted: []string{"anthropic"}, Creds: c})
	conn := r.dial()
	defer conn.Close()
	fmt.Fprintf(conn, "POST http://127.0.0.1:3128/anthropic/v1/messages HTTP/1.1\r\nHost: 127.0.0.1:3128\r\nContent-Length: 2\r\n\r\n{}")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 200 || up.calls.Load() != 1 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

// Every upstream connection goes through Config.Dial, the model route's
// too: with the built-in providers (real public upstreams) and a key, a
// call is handed to Dial as the upstream's name, unresolved, and the
// rig's guard (loopbackOnly) refuses it before any lookup or dial; the
// call fails 502 and nothing reached a resolver.
func TestUpstreamsAreDialedOnlyThroughConfigDial(t *testing.T) {
	c := vaultCreds(t, map[string]string{"anthropic": realKey})
	var mu sync.Mutex
	var refused []string
	guard := loopbackOnly(func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		refused = append(refused, fmt.Sprintf(format, args...))
	})
	r := newRig(t, Config{Providers: creds.BuiltinProviders(), Granted: []string{"anthropic"}, Creds: c, Dial: guard})
	resp := r.post("/anthropic/v1/messages", `{"model":"claude-test","max_tokens":10}`)
	readAll(t, resp)
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d, want 502", resp.StatusCode)
	}
	mu.Lock()
	saw := append([]string(nil), refused...)
	mu.Unlock()
	if len(saw) == 0 || !strings.Contains(saw[0], "api.anthropic.com:443") {
		t.Fatalf("the guard saw %q, want the upstream's name", saw)
	}
	if n := len(r.dns.called()); n != 0 {
		t.Fatalf("%d lookups", n)
	}
	for _, a := range []string{"127.0.0.1:1", "[::1]:1", "[::ffff:127.0.0.1]:1"} {
		refused = refused[:0]
		if conn, err := guard(context.Background(), "tcp", a); err == nil {
			conn.Close()
		}
		if len(refused) != 0 {
			t.Errorf("%s refused as not loopback", a)
		}
	}
	for _, a := range []string{"10.0.0.1:5432", "192.168.1.1:80", "192.0.2.53:53", "elsewhere.example:443", "x"} {
		refused = refused[:0]
		if _, err := guard(context.Background(), "tcp", a); err == nil || len(refused) != 1 {
			t.Errorf("%s: dialed (%v, %q)", a, err, refused)
		}
	}
}

// A model route forwards inference only: files, batches, admin and
// fine-tuning calls never reach the upstream with the real key; org.toml's
// paths add one (exactly, or under a prefix with /*).
func TestRouteDeniedOutsideTheProvidersPaths(t *testing.T) {
	up := newFakeUpstream(t, realOAI)
	c := vaultCreds(t, map[string]string{"openai": realOAI})
	ps := providers(nil, up, c)
	p := ps["openai"]
	p.Paths = append(p.Paths, "POST /v1/chat/summaries", "GET /v1/chat/extra/*")
	ps["openai"] = p
	r := newRig(t, Config{Providers: ps, Granted: []string{"openai"}, Creds: c})
	for _, c := range []struct{ method, path string }{
		{"POST", "/openai/v1/files"}, {"POST", "/openai/v1/batches"}, {"GET", "/openai/v1/organization/users"},
		{"POST", "/openai/v1/fine_tuning/jobs"}, {"DELETE", "/openai/v1/models/ft-1"}, {"GET", "/openai/v1/chat/completions"},
		{"POST", "/openai/v1/%63hat/completions"}, {"POST", "/openai/v1/chat/completions/x"}, {"GET", "/openai/v1/chat/extra"},
	} {
		req, _ := http.NewRequest(c.method, "http://gateway"+c.path, strings.NewReader(`{}`))
		resp, err := r.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		assertRefusal(t, resp, runs.RefuseRouteDenied, creds.StyleOpenAI)
	}
	if n := up.calls.Load(); n != 0 {
		t.Fatalf("the upstream was called %d times", n)
	}
	for _, path := range []string{"/openai/v1/chat/completions", "/openai/v1/chat/summaries"} {
		if resp := r.post(path, `{"model":"gpt-test"}`); resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest("GET", "http://gateway/openai/v1/chat/extra/thing", nil)
	if resp, err := r.client.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("a path under an added prefix: %v %v", resp, err)
	}
	sum, _ := r.g.Summary()
	if sum.Refusals[runs.RefuseRouteDenied] != 9 {
		t.Fatalf("refusals %+v", sum.Refusals)
	}
}
