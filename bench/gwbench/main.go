// Command gwbench measures a run's gateway against the same local
// upstream called directly, side by side in one run (bench/gateway.sh):
// the latency a model call gains (median, p99), the time to the first
// streamed byte, small requests per second through one gateway, and the
// memory one gateway needs for 100 open tunnels. Everything is on
// loopback; it prints figures and ratios, never a verdict.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/roster-sh/roster/lib/gateway"
)

func main() {
	n := flag.Int("n", 2000, "model calls per side for the latency figures")
	dur := flag.Duration("for", 3*time.Second, "how long the throughput run lasts")
	conc := flag.Int("c", 32, "concurrent clients in the throughput run")
	prof := flag.String("cpuprofile", "", "write a CPU profile of the throughput run here")
	count := flag.Int("count", 0, "instead of the figures, make exactly this many small requests (-c at a time) on -side and print the process's CPU time per request: a fixed amount of work, for valgrind --tool=callgrind, strace -c -f or perf stat")
	side := flag.String("side", "gateway", "with -count: gateway or direct")
	flag.Parse()

	up := upstream()
	dir, _ := os.MkdirTemp("", "gwbench-")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "key"), []byte("sk-bench-key\n"), 0o600)
	echo := echoServer()
	g, err := gateway.New(gateway.Config{
		Worker: "bench", Run: "bench",
		Providers: map[string]gateway.Provider{"anthropic": {Name: "anthropic", Style: gateway.StyleAnthropic,
			Upstream: "http://" + up, Credentials: []string{"file:" + filepath.Join(dir, "key")}, KeyEnv: "ANTHROPIC_API_KEY", BaseEnv: "ANTHROPIC_BASE_URL"}},
		Granted: []string{"anthropic"},
		Allow:   []string{echo},
		Ledger:  filepath.Join(dir, "gateway.jsonl"),
	})
	if err != nil {
		fail(err)
	}
	sock := filepath.Join(dir, "gw.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		fail(err)
	}
	go g.Serve(l)
	defer g.Close()
	// the in-box relay's hop is part of the path a box's client takes
	relay := relayTo(sock)

	dBase, vBase := "http://"+up, "http://"+relay+"/anthropic"
	if *count > 0 {
		base := vBase
		if *side == "direct" {
			base = dBase
		}
		fixed(base, *side, *conc, *count)
		return
	}
	latency(dBase, vBase, *n)
	throughput(dBase, vBase, *conc, *dur, *prof)
	tunnels(relay, echo)
}

// call makes one model call (a JSON answer, or a stream) and returns its
// time and the time to its first byte.
func call(c *http.Client, base string, stream bool) (time.Duration, time.Duration) {
	b := `{"model":"claude-bench","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`
	if stream {
		b = strings.Replace(b, "{", `{"stream":true,`, 1)
	}
	req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(b))
	req.Header.Set("x-api-key", "sk-bench-key")
	req.Header.Set("content-type", "application/json")
	t0 := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		fail(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadByte(); err != nil {
		fail(fmt.Errorf("first byte: %v", err))
	}
	first := time.Since(t0)
	io.Copy(io.Discard, br)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		fail(fmt.Errorf("status %d", resp.StatusCode))
	}
	return time.Since(t0), first
}

// latency times model calls direct and through the gateway, interleaved.
func latency(dBase, vBase string, n int) {
	direct := client(nil)
	via := client(nil)
	for i := 0; i < 200; i++ { // warm both paths
		call(direct, dBase, false)
		call(via, vBase, false)
	}
	var dl, vl, dfirst, vfirst []time.Duration
	for i := 0; i < n; i++ { // interleaved, so noise hits both alike
		a, _ := call(direct, dBase, false)
		b, _ := call(via, vBase, false)
		dl, vl = append(dl, a), append(vl, b)
	}
	for i := 0; i < n/4; i++ {
		_, a := call(direct, dBase, true)
		_, b := call(via, vBase, true)
		dfirst, vfirst = append(dfirst, a), append(vfirst, b)
	}
	md, mv := pct(dl, 50), pct(vl, 50)
	pd, pv := pct(dl, 99), pct(vl, 99)
	fmt.Printf("model call (JSON, %d each, interleaved)\n", n)
	fmt.Printf("  direct      median %8s  p99 %8s\n", us(md), us(pd))
	fmt.Printf("  via gateway median %8s  p99 %8s\n", us(mv), us(pv))
	fmt.Printf("  added       median %8s  p99 %8s   (targets <= 1ms, <= 5ms)   ratio %.2fx\n", us(mv-md), us(pv-pd), float64(mv)/float64(md))
	fd, fv := pct(dfirst, 50), pct(vfirst, 50)
	fmt.Printf("first streamed byte (SSE)  direct %s  via gateway %s  added %s (target within 2ms)\n", us(fd), us(fv), us(fv-fd))

}

// throughput runs conc clients for dur against each side in turn.
func throughput(dBase, vBase string, conc int, dur time.Duration, prof string) {
	for _, side := range []struct {
		name, base string
	}{{"direct", dBase}, {"via gateway", vBase}} {
		if prof != "" && side.name != "direct" {
			f, err := os.Create(prof)
			if err != nil {
				fail(err)
			}
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
		var count atomic.Int64
		ctx, cancel := context.WithTimeout(context.Background(), dur)
		var wg sync.WaitGroup
		for i := 0; i < conc; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := client(nil)
				for ctx.Err() == nil {
					call(c, side.base, false)
					count.Add(1)
				}
			}()
		}
		wg.Wait()
		cancel()
		fmt.Printf("throughput %-11s %7.0f requests/s (%d clients, %s)\n", side.name, float64(count.Load())/dur.Seconds(), conc, dur)
	}

}

// fixed makes exactly n small requests against base, conc at a time,
// after a warm-up, and prints the process's CPU time per request.
func fixed(base, side string, conc, n int) {
	// A vault key is written long before a run: let it settle (the
	// gateway rereads a key file changed within the last two seconds at
	// every request).
	time.Sleep(2100 * time.Millisecond)
	c := client(nil)
	for i := 0; i < 50; i++ {
		call(c, base, false)
	}
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	for i := 0; i < conc; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := client(nil)
			for left.Add(-1) >= 0 {
				call(c, base, false)
			}
		}()
	}
	wg.Wait()
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano()-ru0.Utime.Nano()) + time.Duration(ru1.Stime.Nano()-ru0.Stime.Nano())
	fmt.Printf("%d requests %s: CPU time (user+sys, the whole process: clients, relay, gateway, upstream) %s per request\n", n, side, us(cpu/time.Duration(n)))
}

// tunnels opens 100 CONNECT tunnels through the gateway and reports the
// memory they cost.
func tunnels(relay, echo string) {
	// 100 open tunnels: the gateway's heap and the process's RSS
	runtime.GC()
	before := rss()
	var conns []net.Conn
	for i := 0; i < 100; i++ {
		c, err := net.Dial("tcp", relay)
		if err != nil {
			fail(err)
		}
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", echo, echo)
		br := bufio.NewReader(c)
		line, _ := br.ReadString('\n')
		if !strings.Contains(line, " 200") {
			fail(fmt.Errorf("CONNECT: %q", line))
		}
		for {
			l, _ := br.ReadString('\n')
			if l == "\r\n" || l == "" {
				break
			}
		}
		c.Write([]byte("ping\n"))
		br.ReadString('\n')
		conns = append(conns, c)
	}
	runtime.GC()
	after := rss()
	fmt.Printf("100 open tunnels: RSS of this process (gateway, relay and clients together) %.1f MB, %.1f MB more than before them (target: supervisor <= 30 MB)\n", float64(after)/1e6, float64(after-before)/1e6)
	for _, c := range conns {
		c.Close()
	}
}

func client(_ *int) *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64, DisableCompression: true}}
}

// upstream is a fake model API: a small JSON answer, or a short stream.
func upstream() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), `"stream":true`) {
			w.Header().Set("content-type", "text/event-stream")
			io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-bench\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n")
			w.(http.Flusher).Flush()
			io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":1}}\n\n")
			return
		}
		w.Header().Set("content-type", "application/json")
		io.WriteString(w, `{"id":"msg_b","type":"message","model":"claude-bench","content":[{"type":"text","text":"."}],"usage":{"input_tokens":5,"output_tokens":1}}`)
	}))
	return l.Addr().String()
}

// echoServer is a granted TCP target for tunnels: it echoes lines.
func echoServer() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return l.Addr().String()
}

// relayTo is the in-box relay (a TCP port copied to the gateway socket),
// as pid 1 runs it.
func relayTo(sock string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("unix", sock)
				if err != nil {
					return
				}
				defer u.Close()
				go func() { io.Copy(u, c); u.(*net.UnixConn).CloseWrite() }()
				io.Copy(c, u)
			}()
		}
	}()
	return l.Addr().String()
}

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration{}, d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func us(d time.Duration) string { return fmt.Sprintf("%.0fµs", float64(d)/1e3) }

func rss() int64 {
	data, _ := os.ReadFile("/proc/self/statm")
	var size, res int64
	fmt.Sscan(string(data), &size, &res)
	return res * int64(os.Getpagesize())
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gwbench:", err)
	os.Exit(1)
}
