package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/creds"
)

// BenchmarkModelCall compares a non-streamed model call through the
// gateway (Unix socket, credential lookup, usage reading, ledger) with
// the same call straight to the same local upstream. make bench prints
// the ratio; nothing here asserts a time.
func BenchmarkModelCall(b *testing.B) {
	up := newFakeUpstream(&testing.T{}, realKey)
	defer up.srv.Close()
	dir := b.TempDir()
	c := creds.Creds{VaultDir: filepath.Join(dir, "vault"), Env: envMap(nil), PiDir: filepath.Join(dir, "pi")}
	creds.PutVault(c.VaultDir, "anthropic", strings.NewReader(realKey))
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
		var lat latencies
		for b.Loop() {
			t0 := time.Now()
			call(b, direct, up.srv.URL+"/v1/messages", realKey)
			lat = append(lat, time.Since(t0))
		}
		lat.report(b)
	})
	b.Run("gateway", func(b *testing.B) {
		var lat latencies
		for b.Loop() {
			t0 := time.Now()
			call(b, viaGateway, "http://gateway/anthropic/v1/messages", "placeholder")
			lat = append(lat, time.Since(t0))
		}
		lat.report(b)
	})
	// Time to the first streamed byte.
	first := func(b *testing.B, cl *http.Client, url, key string) {
		var lat latencies
		for b.Loop() {
			req, _ := http.NewRequest("POST", url, strings.NewReader(`{"stream":true}`))
			req.Header.Set("X-Api-Key", key)
			t0 := time.Now()
			resp, err := cl.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			one := make([]byte, 1)
			if _, err := io.ReadFull(resp.Body, one); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		lat.report(b)
	}
	b.Run("stream-first-byte-direct", func(b *testing.B) { first(b, direct, up.srv.URL+"/v1/messages", realKey) })
	b.Run("stream-first-byte-gateway", func(b *testing.B) { first(b, viaGateway, "http://gateway/anthropic/v1/messages", "placeholder") })
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
	g, err := New(Config{Providers: creds.BuiltinProviders(), Allow: []string{strings.TrimPrefix(srv.URL, "http://")}, Ledger: filepath.Join(dir, "gateway.jsonl")})
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

// latencies reports the median and 99th percentile as benchmark metrics.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	b.ReportMetric(float64(l[len(l)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(l[len(l)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkTunnels reports the heap that 100 open CONNECT tunnels hold.
func BenchmarkTunnels(b *testing.B) {
	addr, _ := echoServer(&testing.T{})
	dir := b.TempDir()
	g, err := New(Config{Providers: creds.BuiltinProviders(), Allow: []string{addr}})
	if err != nil {
		b.Fatal(err)
	}
	sock := filepath.Join(dir, "gw.sock")
	l, _ := net.Listen("unix", sock)
	go g.Serve(l)
	defer g.Close()
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var conns []net.Conn
		for i := 0; i < 100; i++ {
			c, err := net.Dial("unix", sock)
			if err != nil {
				b.Fatal(err)
			}
			fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n", addr)
			br := bufio.NewReader(c)
			if resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"}); err != nil || resp.StatusCode != 200 {
				b.Fatal(err)
			}
			conns = append(conns, c)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapInuse+after.StackInuse-before.HeapInuse-before.StackInuse)/(1<<20), "MiB/100-tunnels")
		for _, c := range conns {
			c.Close()
		}
	}
}
