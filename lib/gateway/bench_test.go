package gateway

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkModelCall compares a non-streamed model call through the
// gateway (Unix socket, credential lookup, usage reading, ledger) with
// the same call straight to the same local upstream. make bench prints
// the ratio; nothing here asserts a time.
func BenchmarkModelCall(b *testing.B) {
	up := newFakeUpstream(&testing.T{}, realKey)
	defer up.srv.Close()
	dir := b.TempDir()
	c := Creds{VaultDir: filepath.Join(dir, "vault"), Env: envMap(nil), PiDir: filepath.Join(dir, "pi")}
	PutVault(c.VaultDir, "anthropic", strings.NewReader(realKey))
	g, err := New(Config{Providers: providers(up, nil, c), Granted: []string{"anthropic"}, Creds: c,
		Ledger: filepath.Join(dir, "gateway.jsonl"), Prices: map[string]Price{"claude-test": {Input: 3, Output: 15}}})
	if err != nil {
		b.Fatal(err)
	}
	sock := filepath.Join(dir, "gw.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	go g.Serve(l)
	defer g.Close()

	viaGateway := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	direct := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	body := `{"model":"claude-test","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	call := func(b *testing.B, cl *http.Client, url, key string) {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("X-Api-Key", key)
		resp, err := cl.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatal(resp.StatusCode)
		}
	}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			call(b, direct, up.srv.URL+"/v1/messages", realKey)
		}
	})
	b.Run("gateway", func(b *testing.B) {
		for b.Loop() {
			call(b, viaGateway, "http://gateway/anthropic/v1/messages", "placeholder")
		}
	})
	b.Run("gateway-parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				call(b, viaGateway, "http://gateway/anthropic/v1/messages", "placeholder")
			}
		})
	})
}

// BenchmarkHTTPEgress compares a small absolute-URI http request through
// the gateway with the same request made directly.
func BenchmarkHTTPEgress(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	dir := b.TempDir()
	g, err := New(Config{Providers: BuiltinProviders(), Allow: []string{strings.TrimPrefix(srv.URL, "http://")}, Ledger: filepath.Join(dir, "gateway.jsonl")})
	if err != nil {
		b.Fatal(err)
	}
	sock := filepath.Join(dir, "gw.sock")
	l, _ := net.Listen("unix", sock)
	go g.Serve(l)
	defer g.Close()
	proxied := &http.Client{Transport: &http.Transport{
		Proxy: func(*http.Request) (*urlType, error) { return gatewayURL, nil },
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	direct := &http.Client{}
	get := func(b *testing.B, cl *http.Client) {
		resp, err := cl.Get(srv.URL + "/x")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatal(resp.StatusCode)
		}
	}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			get(b, direct)
		}
	})
	b.Run("gateway", func(b *testing.B) {
		for b.Loop() {
			get(b, proxied)
		}
	})
}

type urlType = url.URL

var gatewayURL = &url.URL{Scheme: "http", Host: "gateway"}
