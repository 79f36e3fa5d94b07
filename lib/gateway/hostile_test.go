package gateway

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/creds"
	"github.com/roster-sh/roster/lib/runs"
)

// Tests of a hostile box. Limits are shrunk so that each bound is reached
// quickly; no test asserts a duration. A bound that failed would hang the
// test, so each wait has a generous safety deadline that fails it instead.

const safety = 30 * time.Second

// healthy asserts that the gateway still answers an ordinary request.
func (r *rig) healthy() {
	r.t.Helper()
	deadline := time.Now().Add(safety)
	resp, err := r.client.Get("http://gateway/")
	for err != nil && errors.Is(err, syscall.EAGAIN) && time.Now().Before(deadline) {
		// The backlog is still full of a flood's connections, which the
		// gateway drains one slot at a time.
		time.Sleep(10 * time.Millisecond)
		resp, err = r.client.Get("http://gateway/")
	}
	if err != nil {
		r.t.Fatalf("gateway stopped serving: %v", err)
	}
	assertRefusal(r.t, resp, runs.RefuseBadRequest, "")
}

// waitClosed reads c until the gateway closes it.
func waitClosed(t *testing.T, c net.Conn) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(safety))
	b, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the gateway never closed the connection")
	}
	return b
}

func TestSlowlorisIsCutAtReadHeaderTimeout(t *testing.T) {
	r := newRig(t, Config{Providers: creds.BuiltinProviders(), Limits: Limits{ReadHeaderTimeout: 200 * time.Millisecond}})
	c := r.dial()
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: gateway\r\nX-Slow: ")
	stop := make(chan struct{})
	go func() { // one byte at a time, never finishing the head
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				if _, err := io.WriteString(c, "a"); err != nil {
					return
				}
			}
		}
	}()
	waitClosed(t, c)
	close(stop)
	r.healthy()
}

func TestHugeHeaderIsRefused(t *testing.T) {
	r := newRig(t, Config{Providers: creds.BuiltinProviders(), Limits: Limits{MaxHeaderBytes: 8 << 10}})
	c := r.dial()
	defer c.Close()
	go func() { // 100 MB of header; the gateway stops reading long before
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: gateway\r\nX-Big: ")
		chunk := strings.Repeat("a", 1<<20)
		for i := 0; i < 100; i++ {
			if _, err := io.WriteString(c, chunk); err != nil {
				return
			}
		}
	}()
	c.SetReadDeadline(time.Now().Add(safety))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a huge header: %v", err)
	}
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("status %d", resp.StatusCode)
	}
	c.Close()
	r.healthy()
}

// Content-Length and Transfer-Encoding together: net/http would accept it
// (dropping Content-Length); the gateway refuses it and closes, and the
// smuggled request behind it is never served.
func TestSmuggledRequestIsRefused(t *testing.T) {
	up := newFakeUpstream(t, realKey)
	c := vaultCreds(t, map[string]string{"anthropic": realKey})
	r := newRig(t, Config{Providers: providers(up, nil, c), Granted: []string{"anthropic"}, Creds: c})
	for _, raw := range []string{
		"POST /anthropic/v1/messages HTTP/1.1\r\nHost: g\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /anthropic/v1/models HTTP/1.1\r\nHost: g\r\n\r\n",
		"POST /anthropic/v1/messages HTTP/1.1\r\nHost: g\r\ntransfer-encoding: chunked\r\ncontent-length: 44\r\n\r\n0\r\n\r\n",
		// A folded line, which net/http joins to the one before.
		"POST /anthropic/v1/messages HTTP/1.1\r\nHost: g\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n",
		// A clean request first, then the ambiguous one on the same connection.
		"POST /anthropic/v1/messages HTTP/1.1\r\nHost: g\r\nContent-Length: 2\r\n\r\n{}" +
			"POST /anthropic/v1/messages HTTP/1.1\r\nHost: g\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n" +
			"POST /x HTTP/1.1\r\nHost: g\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	} {
		conn := r.dial()
		before := up.calls.Load()
		io.WriteString(conn, raw)
		br := bufio.NewReader(conn)
		var statuses []int
		for {
			conn.SetReadDeadline(time.Now().Add(safety))
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				break
			}
			io.Copy(io.Discard, resp.Body)
			statuses = append(statuses, resp.StatusCode)
			if resp.Header.Get("X-Roster-Refusal") == runs.RefuseBadRequest {
				if !resp.Close {
					t.Errorf("refused smuggling but kept the connection")
				}
				break
			}
		}
		conn.Close()
		last := statuses[len(statuses)-1]
		if last != 403 {
			t.Fatalf("%q: statuses %v", raw, statuses)
		}
		if served := up.calls.Load() - before; served != int64(len(statuses)-1) {
			t.Fatalf("%q: upstream served %d, statuses %v", raw, served, statuses)
		}
	}
	// What net/http refuses itself (two differing lengths, an encoding
	// other than chunked, a line-folded Transfer-Encoding): answered 4xx/5xx
	// and never served upstream.
	for _, raw := range []string{
		"POST /anthropic/v1/messages HTTP/1.1\r\nHost: g\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n{}",
		"POST /anthropic/v1/messages HTTP/1.1\r\nHost: g\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
	} {
		conn := r.dial()
		before := up.calls.Load()
		io.WriteString(conn, raw)
		conn.SetReadDeadline(time.Now().Add(safety))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil || resp.StatusCode < 400 || up.calls.Load() != before {
			t.Fatalf("%q: %v %v, upstream calls %d", raw, resp, err, up.calls.Load()-before)
		}
		conn.Close()
	}
	// Behind a refused CONNECT (after which the guard no longer follows the
	// framing) nothing more is read from the connection.
	conn := r.dial()
	before := up.calls.Load()
	io.WriteString(conn, "CONNECT nowhere.test:443 HTTP/1.1\r\nHost: x\r\n\r\n"+
		"POST /anthropic/v1/messages HTTP/1.1\r\nHost: g\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil || resp.Header.Get("X-Roster-Refusal") != runs.RefuseHostDenied || !resp.Close {
		t.Fatalf("refused CONNECT: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	if rest := waitClosed(t, conn); len(rest)+br.Buffered() != 0 || up.calls.Load() != before {
		t.Fatalf("served after a refused CONNECT: %q", rest)
	}
	r.healthy()
}

// A tunnel in which neither side sends a byte is closed after TunnelIdle
// and recorded.
func TestIdleTunnelIsClosed(t *testing.T) {
	addr, _ := echoServer(t)
	r := newRig(t, Config{Providers: creds.BuiltinProviders(), Allow: []string{addr}, Limits: Limits{TunnelIdle: 200 * time.Millisecond}})
	resp, c, _ := r.connect(addr)
	if resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	waitClosed(t, c)
	r.healthy()
	ls := r.lines()
	var closing []runs.LedgerEntry
	for _, e := range ls {
		if e.Kind == "connect" && !e.Open {
			closing = append(closing, e)
		}
	}
	if len(closing) != 1 || closing[0].BytesUp != 0 {
		t.Fatalf("ledger %+v", ls)
	}
}

// 10,000 connections at once: at most MaxConns are held by the gateway
// (the rest wait in the backlog or are refused by the kernel), its
// goroutines stay bounded, and it serves normally once they go.
func TestConnectionFloodIsBounded(t *testing.T) {
	const maxConns = 64
	r := newRig(t, Config{Providers: creds.BuiltinProviders(), Limits: Limits{MaxConns: maxConns, ReadHeaderTimeout: time.Minute}})
	base := runtime.NumGoroutine()
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	for w := 0; w < 50; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				c, err := net.Dial("unix", r.sock)
				if err != nil {
					continue // refused past the backlog
				}
				io.WriteString(c, "GET / HTTP/1.1\r\n") // a head never finished
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// The gateway holds at most maxConns; one goroutine each, plus slack
	// for the runtime's own.
	if g := runtime.NumGoroutine() - base; g > maxConns+20 {
		t.Fatalf("%d goroutines for %d connections", g, len(conns))
	}
	for _, c := range conns {
		c.Close()
	}
	r.healthy()
	if len(conns) < 1000 {
		t.Fatalf("only %d connections made: the flood did not happen", len(conns))
	}
	t.Logf("%d of 10000 connections made, gateway goroutines bounded", len(conns))
}

// Close ends open tunnels and in-flight streams, and the ledger has their
// lines.
func TestCloseEndsTunnelsAndStreams(t *testing.T) {
	addr, _ := echoServer(t)
	up := newFakeUpstream(t, realKey)
	up.pause = make(chan struct{}) // never released: the stream hangs mid-way
	c := vaultCreds(t, map[string]string{"anthropic": realKey})
	r := newRig(t, Config{Providers: providers(up, nil, c), Granted: []string{"anthropic"}, Creds: c, Allow: []string{addr}})
	resp, tc, _ := r.connect(addr)
	if resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	sresp := r.post("/anthropic/v1/messages", `{"stream":true}`)
	br := bufio.NewReader(sresp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, "Hello") {
			break
		}
	}
	done := make(chan error, 1)
	go func() { done <- r.g.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(safety):
		t.Fatal("Close did not return")
	}
	waitClosed(t, tc)
	ls := r.lines()
	var model, tunnelEnd bool
	for _, e := range ls {
		model = model || (e.Kind == "model" && e.InputTokens == 25)
		tunnelEnd = tunnelEnd || (e.Kind == "connect" && !e.Open)
	}
	if !model || !tunnelEnd {
		t.Fatalf("ledger after Close: %+v", ls)
	}
}

// The red team's ledger flood: cheap allowed requests fill the ledger's
// cap, and then a refusal and a model call must still be written (up to
// the hard cap, four times the soft one), while run.json's totals stay
// exact whatever the ledger kept.
func TestLedgerFloodHidesNoRefusalOrModelCall(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer target.Close()
	host := strings.TrimPrefix(target.URL, "http://")
	up := newFakeUpstream(t, realKey)
	c := vaultCreds(t, map[string]string{"anthropic": realKey})
	r := newRig(t, Config{Providers: providers(up, nil, c), Granted: []string{"anthropic"}, Creds: c, Allow: []string{host}, LedgerMax: 2000})
	proxied := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", r.sock)
		},
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "gateway"}),
	}}
	const flood = 60
	for i := 0; i < flood; i++ {
		resp, err := proxied.Get(target.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	r.healthy() // a refusal (bad_request)
	resp := r.post("/anthropic/v1/messages", `{"model":"claude-test"}`)
	readAll(t, resp)
	ls := r.lines()
	last := ls[len(ls)-1]
	var httpLines int
	var refusal, model bool
	for _, e := range ls {
		httpLines += map[bool]int{true: 1}[e.Kind == "http"]
		refusal = refusal || e.Refusal == runs.RefuseBadRequest
		model = model || e.Kind == "model" && e.InputTokens == 10
	}
	if last.Kind != "capped" || last.Dropped == 0 || int(last.Dropped)+httpLines != flood || !refusal || !model {
		t.Fatalf("last line %+v of %d (http %d, refusal %v, model %v)", last, len(ls), httpLines, refusal, model)
	}
	st, _ := os.Stat(r.ledger)
	if st.Size() > HardCapFactor*2000+500 {
		t.Fatalf("ledger %d bytes", st.Size())
	}
	sum, u := r.g.Summary()
	if sum.Requests != flood+2 || sum.Refused != 1 || u.ModelCalls != 1 || u.InputTokens != 10 {
		t.Fatalf("summary counts every request: %+v %+v", sum, u)
	}
}

// Past the hard cap even refusals are dropped (and counted): the file
// stays bounded whatever a box sends.
func TestLedgerHardCap(t *testing.T) {
	r := newRig(t, Config{Providers: creds.BuiltinProviders(), LedgerMax: 1000})
	for i := 0; i < 80; i++ {
		r.healthy()
	}
	ls := r.lines()
	last := ls[len(ls)-1]
	if last.Kind != "capped" || last.Dropped == 0 || int(last.Dropped)+len(ls)-1 != 80 {
		t.Fatalf("last line %+v of %d", last, len(ls))
	}
	if st, _ := os.Stat(r.ledger); st.Size() > HardCapFactor*1000+500 || st.Size() < 2*1000 {
		t.Fatalf("ledger %d bytes", st.Size())
	}
	if sum, _ := r.g.Summary(); sum.Requests != 80 || sum.Refusals[runs.RefuseBadRequest] != 80 {
		t.Fatalf("summary counts every request: %+v", sum)
	}
}

// A ledger left with a torn last line (a write cut short by a kill -9) is
// truncated after its last whole line when opened again, so the next line
// starts on a line of its own; whole lines are kept.
func TestLedgerOpenDropsTornTail(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{`{"seq":1}` + "\n", `{"seq":1}` + "\n"},
		{`{"seq":1}` + "\n" + `{"seq":2,"ki`, `{"seq":1}` + "\n"},
		{`{"seq":1,"ki`, ""},
		{`{"seq":1}` + "\n" + strings.Repeat("x", 200<<10), `{"seq":1}` + "\n"},
	} {
		p := filepath.Join(t.TempDir(), "gateway.jsonl")
		if err := os.WriteFile(p, []byte(tc.in), 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := openLedger(p, 0, time.Now)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.close(); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(p)
		if string(got) != tc.want {
			t.Fatalf("%.40q: left %.40q, want %q", tc.in, got, tc.want)
		}
	}
}
