package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/roster-sh/roster/lib/creds"
	"github.com/roster-sh/roster/lib/runs"
)

// fakeUpstream plays a model provider on 127.0.0.1: it checks the
// credential it receives and answers scripted Anthropic and OpenAI
// responses, streamed or not. It is the one stand-in the tests use.
type fakeUpstream struct {
	srv *httptest.Server

	mu     sync.Mutex
	key    string // the credential it accepts
	oauth  bool   // expects Authorization: Bearer + the oauth beta (Anthropic)
	seen   []http.Header
	paths  []string
	pause  chan struct{} // when set, SSE answers stop mid-stream until it is closed
	calls  atomic.Int64
	bigPad int // bytes of content before usage in non-stream answers
}

func newFakeUpstream(t *testing.T, key string) *fakeUpstream {
	f := &fakeUpstream{key: key}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeUpstream) setKey(key string, oauth bool) {
	f.mu.Lock()
	f.key, f.oauth = key, oauth
	f.mu.Unlock()
}

func (f *fakeUpstream) lastHeader() http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) == 0 {
		return nil
	}
	return f.seen[len(f.seen)-1]
}

func (f *fakeUpstream) serve(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	f.mu.Lock()
	f.seen = append(f.seen, r.Header.Clone())
	f.paths = append(f.paths, r.URL.RequestURI())
	key, oauth, pause, pad := f.key, f.oauth, f.pause, f.bigPad
	f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	stream := strings.Contains(string(body), `"stream":true`)
	openai := strings.HasPrefix(r.URL.Path, "/v1/chat/")

	ok := false
	switch {
	case openai:
		ok = r.Header.Get("Authorization") == "Bearer "+key && r.Header.Get("X-Api-Key") == ""
	case oauth:
		ok = r.Header.Get("Authorization") == "Bearer "+key && r.Header.Get("X-Api-Key") == "" &&
			strings.Contains(r.Header.Get("Anthropic-Beta"), "oauth-2025-04-20")
	default:
		ok = r.Header.Get("X-Api-Key") == key && r.Header.Get("Authorization") == ""
	}
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
		return
	}
	if openai {
		w.Header().Set("X-Request-Id", "req_oai_1")
	} else {
		w.Header().Set("Request-Id", "req_ant_1")
	}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		text := strings.Repeat("x", pad)
		if openai {
			fmt.Fprintf(w, `{"id":"chatcmpl-2","object":"chat.completion","model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":%q}}],"usage":{"prompt_tokens":12,"completion_tokens":4,"total_tokens":16}}`, text)
		} else {
			fmt.Fprintf(w, `{"id":"msg_2","type":"message","role":"assistant","model":"claude-test-20250101","content":[{"type":"text","text":%q}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":5}}`, text)
		}
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	first, rest := anthropicSSE1, anthropicSSE2
	if openai {
		first, rest = openaiSSE1, openaiSSE2
	}
	io.WriteString(w, first)
	fl.Flush()
	if pause != nil {
		select {
		case <-pause:
		case <-r.Context().Done():
			return
		}
	}
	io.WriteString(w, rest)
	fl.Flush()
}

const anthropicSSE1 = `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test-20250101","content":[],"stop_reason":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":3,"cache_read_input_tokens":7,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}

`

const anthropicSSE2 = `event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" world"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}

event: message_stop
data: {"type":"message_stop"}

`

const openaiSSE1 = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"gpt-test","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"}}],"usage":null}

`

const openaiSSE2 = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"gpt-test","choices":[{"index":0,"delta":{"content":" world"},"finish_reason":"stop"}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"gpt-test","choices":[],"usage":{"prompt_tokens":30,"completion_tokens":9,"total_tokens":39,"prompt_tokens_details":{"cached_tokens":10}}}

data: [DONE]

`

// fakeDNS is the injected resolver: names map to addresses, every call is
// counted, and anything unknown fails (no test ever reaches a real one).
type fakeDNS struct {
	mu     sync.Mutex
	names  map[string][]netip.Addr
	calls  []string
	public []string // names asked that are not in a reserved test domain
}

// reservedName tells whether host is in a domain reserved for tests and
// never delegated (RFC 2606, RFC 6761): the only names a test may have
// the gateway look up. Any other name reaching the resolver fails the
// test, so a public name is shown refused before any lookup, in every
// test that uses the rig (and the resolver is the rig's: nothing falls
// back to the system's).
func reservedName(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	for _, tld := range []string{"test", "invalid", "example", "localhost"} {
		if h == tld || strings.HasSuffix(h, "."+tld) {
			return true
		}
	}
	return false
}

func (d *fakeDNS) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, host)
	if !reservedName(host) {
		d.public = append(d.public, host)
	}
	if a, ok := d.names[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// loopbackOnly is the rig's dialer: an address that is not a loopback IP
// (a name, a public or private-range address) fails the test and is never
// dialed, so no test of the gateway sends traffic beyond loopback, even
// to an upstream a test forgot to point at its own server.
func loopbackOnly(errorf func(format string, args ...any)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if ip, perr := netip.ParseAddr(host); err != nil || perr != nil || !ip.Unmap().IsLoopback() {
			errorf("the gateway dialed %s %s, not a loopback address", network, addr)
			return nil, fmt.Errorf("test: %s is not loopback: not dialed", addr)
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
}

func (d *fakeDNS) called() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.calls...)
}

// rig is a gateway served on a Unix socket, as in production, with a
// client that dials it.
type rig struct {
	t      *testing.T
	g      *Gateway
	sock   string
	ledger string
	dns    *fakeDNS
	client *http.Client
}

func (r *rig) dial() net.Conn {
	c, err := net.Dial("unix", r.sock)
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

// newRig starts a gateway for cfg (the ledger in a temporary run folder,
// the fake resolver unless cfg has one).
func newRig(t *testing.T, cfg Config) *rig {
	t.Helper()
	dir := t.TempDir()
	r := &rig{t: t, sock: filepath.Join(dir, "gateway.sock"), ledger: filepath.Join(dir, "gateway.jsonl"), dns: &fakeDNS{names: map[string][]netip.Addr{}}}
	if cfg.Ledger == "" {
		cfg.Ledger = r.ledger
	}
	r.ledger = cfg.Ledger
	if cfg.Resolve == nil {
		cfg.Resolve = r.dns.resolve
	}
	if cfg.Dial == nil {
		cfg.Dial = loopbackOnly(t.Errorf)
	}
	t.Cleanup(func() {
		r.dns.mu.Lock()
		defer r.dns.mu.Unlock()
		if len(r.dns.public) > 0 {
			t.Errorf("the gateway looked up names outside the reserved test domains: %v", r.dns.public)
		}
	})
	if cfg.Worker == "" {
		cfg.Worker, cfg.Run = "w", "r1"
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.g = g
	l, err := net.Listen("unix", r.sock)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- g.Serve(l) }()
	t.Cleanup(func() {
		g.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", r.sock)
		},
		DisableCompression: true,
	}
	t.Cleanup(tr.CloseIdleConnections)
	r.client = &http.Client{Transport: tr}
	return r
}

// post sends a model request through the gateway with a placeholder and
// junk credentials of the client's own, which must never reach upstream.
func (r *rig) post(path, body string) *http.Response {
	r.t.Helper()
	req, _ := http.NewRequest("POST", "http://gateway"+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", "sk-ant-api03-roster-placeholder")
	req.Header.Set("Authorization", "Bearer box-made-up")
	req.Header.Set("Cookie", "session=box")
	req.Header.Set("Anthropic-Beta", "fine-grained-tool-streaming-2025-05-14")
	resp, err := r.client.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	return resp
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lines reads the ledger after the gateway is closed.
func (r *rig) lines() []runs.LedgerEntry {
	r.t.Helper()
	r.g.Close()
	f, err := os.Open(r.ledger)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	var out []runs.LedgerEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e runs.LedgerEntry
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			r.t.Fatalf("ledger line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	// seq counts every line; a capped ledger skips those it dropped.
	capped := len(out) > 0 && out[len(out)-1].Kind == "capped"
	for i, e := range out {
		if e.Seq != int64(i+1) && !(capped && (i == 0 || e.Seq > out[i-1].Seq)) {
			r.t.Fatalf("ledger seq %d at line %d", e.Seq, i+1)
		}
	}
	return out
}

// assertRefusal checks the refusal contract: 403, the header, and a body
// in the route's shape naming the kind.
func assertRefusal(t *testing.T, resp *http.Response, kind, shape string) {
	t.Helper()
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Roster-Refusal") != kind {
		t.Fatalf("want 403 %s, got %d %q: %s", kind, resp.StatusCode, resp.Header.Get("X-Roster-Refusal"), body)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	switch shape {
	case creds.StyleAnthropic:
		e, _ := v["error"].(map[string]any)
		if v["type"] != "error" || e["type"] != "permission_error" || !strings.HasPrefix(e["message"].(string), "roster gateway: "+kind+": ") {
			t.Fatalf("not an Anthropic error: %s", body)
		}
	case creds.StyleOpenAI:
		e, _ := v["error"].(map[string]any)
		if e["type"] != "permission_error" || e["code"] != kind || !strings.HasPrefix(e["message"].(string), "roster gateway: "+kind+": ") {
			t.Fatalf("not an OpenAI error: %s", body)
		}
	default:
		if v["refusal"] != kind {
			t.Fatalf("plain refusal body: %s", body)
		}
	}
}

// providers points the built-in providers at fake upstreams.
func providers(anth, oai *fakeUpstream, c creds.Creds) map[string]creds.Provider {
	ps := creds.BuiltinProviders()
	for name, f := range map[string]*fakeUpstream{"anthropic": anth, "openai": oai} {
		p := ps[name]
		if f != nil {
			p.Upstream = f.srv.URL
		} else {
			p.Upstream = "http://127.0.0.1:1" // never dialed: no grant
		}
		ps[name] = p
	}
	return ps
}
