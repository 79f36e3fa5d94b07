// Command gwbench measures a run's gateway against the same local
// upstream called directly, side by side in one run (bench/gateway.sh):
// the latency a model call gains (median, p99), the time to the first
// streamed byte, small requests per second through one gateway, and the
// memory one gateway needs for 100 open tunnels. Everything is on
// loopback; it prints figures and ratios, never a verdict.
//
// The parts run as they do in production, each in a process of its own:
// the clients (this process, the box's agent), the in-box relay
// (lib/box/reaper.Relay, the box's pid 1), the gateway (the run's
// supervisor) and the fake model upstream. Each child reports its own CPU
// time and allocations, so the figures say which part costs what, and
// whether the clients (which share the cores) are the bottleneck.
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
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/roster-sh/roster/lib/box/reaper"
	"github.com/roster-sh/roster/lib/creds"
	"github.com/roster-sh/roster/lib/gateway"
)

func main() {
	n := flag.Int("n", 2000, "model calls per side for the latency figures")
	dur := flag.Duration("for", 3*time.Second, "how long each throughput run lasts")
	rounds := flag.Int("rounds", 3, "throughput runs per side, interleaved (direct, gateway, direct, ...); medians are printed")
	conc := flag.Int("c", 16, "concurrent clients in the throughput run")
	prof := flag.String("cpuprofile", "", "write a CPU profile of the gateway process over the throughput runs through it here")
	memprof := flag.String("memprofile", "", "write the gateway process's allocations (every one sampled) here after the throughput runs")
	count := flag.Int("count", 0, "instead of the figures, make exactly this many small requests (-c at a time) on -side and print each process's CPU time and allocations per request: a fixed amount of work, for valgrind --tool=callgrind --trace-children=yes, strace -c -f or perf stat")
	side := flag.String("side", "gateway", "with -count: gateway or direct")
	serve := flag.String("serve", "", "internal: run one part (upstream, relay, gateway) as a child")
	flag.Parse()

	if *serve != "" {
		child(*serve, flag.Args())
		return
	}

	dir, _ := os.MkdirTemp("", "gwbench-")
	defer os.RemoveAll(dir)
	up := start("upstream")
	defer up.stop()
	sock := filepath.Join(dir, "gw.sock")
	gwArgs := []string{up.addr, up.echo, dir, sock}
	if *memprof != "" {
		gwArgs = append(gwArgs, "memprofile")
	}
	gw := start("gateway", gwArgs...)
	defer gw.stop()
	relay := start("relay", sock)
	defer relay.stop()

	dBase, vBase := "http://"+up.addr, "http://"+relay.addr+"/anthropic"
	if *count > 0 {
		base, parts := vBase, []*part{relay, gw, up}
		if *side == "direct" {
			base, parts = dBase, []*part{up}
		}
		fixed(base, *side, *conc, *count, parts)
		return
	}
	latency(dBase, vBase, *n)
	fresh(dBase, vBase, *n/2)
	throughput(dBase, vBase, *conc, *dur, *rounds, *prof, relay, gw, up)
	if *memprof != "" {
		gw.cmd("heap " + *memprof)
	}
	tunnels(relay.addr, up.echo, gw)
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
	req.Header.Set("anthropic-version", "2023-06-01")
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
	direct := client()
	via := client()
	dl, vl := interleaved(direct, via, dBase, vBase, 200, n)
	var dfirst, vfirst []time.Duration
	for i := 0; i < n/4; i++ {
		_, a := call(direct, dBase, true)
		_, b := call(via, vBase, true)
		dfirst, vfirst = append(dfirst, a), append(vfirst, b)
	}
	printLatency(fmt.Sprintf("model call (JSON, %d each, interleaved)", n), "targets <= 1ms, <= 5ms", dl, vl)
	fd, fv := pct(dfirst, 50), pct(vfirst, 50)
	fmt.Printf("first streamed byte (SSE)  direct %s  via gateway %s  added %s (target within 2ms)\n", us(fd), us(fv), us(fv-fd))
}

// load runs conc clients against base for dur and returns the requests
// made.
func load(base string, conc int, dur time.Duration) int64 {
	var count atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < conc; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := client()
			for ctx.Err() == nil {
				call(c, base, false)
				count.Add(1)
			}
		}()
	}
	wg.Wait()
	return count.Load()
}

// throughput runs conc clients for dur against each side in turn, rounds
// times, and prints requests/s and each process's CPU per request.
func throughput(dBase, vBase string, conc int, dur time.Duration, rounds int, prof string, relay, gw, up *part) {
	load(vBase, conc, 300*time.Millisecond) // warm the gateway's upstream connections
	self := &part{name: "clients"}
	var dRate, vRate []float64
	var dCPU, vCPU = map[string][]float64{}, map[string][]float64{}
	fmt.Printf("throughput, %d clients, %s a run, %d runs a side interleaved; loadavg before: %s", conc, dur, rounds, loadavg()+"\n")
	for r := 0; r < rounds; r++ {
		for _, side := range []struct {
			name, base string
			parts      []*part
			rate       *[]float64
			cpu        map[string][]float64
		}{
			{"direct", dBase, []*part{self, up}, &dRate, dCPU},
			{"via gateway", vBase, []*part{self, relay, gw, up}, &vRate, vCPU},
		} {
			if prof != "" && side.name != "direct" {
				gw.cmd(fmt.Sprintf("profile %s.%d", prof, r))
			}
			before := snap(side.parts)
			t0 := time.Now()
			n := load(side.base, conc, dur)
			el := time.Since(t0)
			after := snap(side.parts)
			if prof != "" && side.name != "direct" {
				gw.cmd("stop")
			}
			rate := float64(n) / el.Seconds()
			*side.rate = append(*side.rate, rate)
			line := fmt.Sprintf("  %-11s %7.0f requests/s   CPU µs/request:", side.name, rate)
			total := 0.0
			for i, p := range side.parts {
				d := after[i].sub(before[i])
				c := float64(d.cpu.Microseconds()) / float64(n)
				total += c
				side.cpu[p.name] = append(side.cpu[p.name], c)
				line += fmt.Sprintf(" %s %.1f (%.1f allocs)", p.name, c, float64(d.mallocs)/float64(n))
			}
			side.cpu["total"] = append(side.cpu["total"], total)
			fmt.Printf("%s  total %.1f\n", line, total)
		}
	}
	md, mv := median(dRate), median(vRate)
	fmt.Printf("throughput median: direct %.0f/s  via gateway %.0f/s (target >= 5000/s)  ratio via/direct %.2f; loadavg after: %s", md, mv, mv/md, loadavg()+"\n")
	fmt.Printf("CPU per request, median: clients %.1fµs, relay %.1fµs, gateway %.1fµs, upstream %.1fµs (direct: clients %.1fµs, upstream %.1fµs)\n",
		median(vCPU["clients"]), median(vCPU["relay"]), median(vCPU["gateway"]), median(vCPU["upstream"]), median(dCPU["clients"]), median(dCPU["upstream"]))
	g, all := median(vCPU["gateway"]), median(vCPU["total"])
	fmt.Printf("  share of the CPU: clients %.0f%%, relay %.0f%%, gateway %.0f%%, upstream %.0f%%\n",
		100*median(vCPU["clients"])/all, 100*median(vCPU["relay"])/all, 100*g/all, 100*median(vCPU["upstream"])/all)
	fmt.Printf("  estimates from CPU per request (not measured rates): all four parts on two idle cores at most %.0f requests/s (2 cores / %.0fµs); the gateway alone, its two cores to itself, at most %.0f requests/s\n",
		2e6/all, all, 2e6/g)
}

// fixed makes exactly n small requests against base, conc at a time,
// after a warm-up, and prints each process's CPU time per request.
func fixed(base, side string, conc, n int, parts []*part) {
	c := client()
	for i := 0; i < 50; i++ {
		call(c, base, false)
	}
	parts = append([]*part{{name: "clients"}}, parts...)
	before := snap(parts)
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	for i := 0; i < conc; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := client()
			for left.Add(-1) >= 0 {
				call(c, base, false)
			}
		}()
	}
	wg.Wait()
	after := snap(parts)
	fmt.Printf("%d requests %s, per request:", n, side)
	for i, p := range parts {
		d := after[i].sub(before[i])
		fmt.Printf(" %s CPU %.1fµs %.1f allocs %.0f B;", p.name, float64(d.cpu.Nanoseconds())/1e3/float64(n), float64(d.mallocs)/float64(n), float64(d.bytes)/float64(n))
	}
	fmt.Println()
}

// tunnels opens 100 CONNECT tunnels through the gateway and reports the
// memory they cost the gateway's process.
func tunnels(relay, echo string, gw *part) {
	before := gw.stats(true)
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
	after := gw.stats(true)
	fmt.Printf("100 open tunnels: RSS of the gateway's process %.1f MB, %.1f MB more than before them (target: supervisor <= 30 MB)\n", float64(after.rss)/1e6, float64(after.rss-before.rss)/1e6)
	for _, c := range conns {
		c.Close()
	}
}

// interleaved makes warm calls on each side, then n timed JSON model calls
// on each, alternating, so noise hits both alike.
func interleaved(direct, via *http.Client, dBase, vBase string, warm, n int) (dl, vl []time.Duration) {
	for i := 0; i < warm; i++ {
		call(direct, dBase, false)
		call(via, vBase, false)
	}
	for i := 0; i < n; i++ {
		a, _ := call(direct, dBase, false)
		b, _ := call(via, vBase, false)
		dl, vl = append(dl, a), append(vl, b)
	}
	return dl, vl
}

// fresh times model calls made each on a new connection (curl's way, and
// an agent CLI's first call): direct, a new TCP connection to the
// upstream; via the gateway, a new one to the in-box relay, which opens a
// new one to the gateway's socket (the gateway's own to the upstream is
// kept alive, as in a run).
func fresh(dBase, vBase string, n int) {
	direct, via := client(), client()
	direct.Transport.(*http.Transport).DisableKeepAlives = true
	via.Transport.(*http.Transport).DisableKeepAlives = true
	dl, vl := interleaved(direct, via, dBase, vBase, 100, n)
	printLatency(fmt.Sprintf("model call on a fresh connection each (%d each, interleaved)", n), "target <= 1ms at p50", dl, vl)
}

// printLatency prints both sides' median and p99 and what the gateway
// adds.
func printLatency(title, target string, dl, vl []time.Duration) {
	md, mv := pct(dl, 50), pct(vl, 50)
	pd, pv := pct(dl, 99), pct(vl, 99)
	fmt.Println(title)
	fmt.Printf("  direct      median %8s  p99 %8s\n", us(md), us(pd))
	fmt.Printf("  via gateway median %8s  p99 %8s\n", us(mv), us(pv))
	fmt.Printf("  added       median %8s  p99 %8s   (%s)   ratio %.2fx\n", us(mv-md), us(pv-pd), target, float64(mv)/float64(md))
}

// client is a keep-alive HTTP client for one side.
func client() *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64, DisableCompression: true}}
}

// part is one process of the bench: a child, or (no cmd) this process.
type part struct {
	name string
	addr string // where it listens (upstream, relay)
	echo string // upstream: a TCP echo server, the tunnels' target
	proc *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	sync.Mutex
}

// start runs this program as the child serving role.
func start(role string, args ...string) *part {
	exe, err := os.Executable()
	if err != nil {
		fail(err)
	}
	p := &part{name: role, proc: exec.Command(exe, append([]string{"-serve", role, "--"}, args...)...)}
	p.proc.Stderr = os.Stderr
	p.in, _ = p.proc.StdinPipe()
	out, _ := p.proc.StdoutPipe()
	p.out = bufio.NewReader(out)
	if err := p.proc.Start(); err != nil {
		fail(err)
	}
	ready := strings.Fields(p.reply())
	if len(ready) < 1 || ready[0] != "ready" {
		fail(fmt.Errorf("%s: %q", role, ready))
	}
	if len(ready) > 1 {
		p.addr = ready[1]
	}
	if len(ready) > 2 {
		p.echo = ready[2]
	}
	return p
}

func (p *part) reply() string {
	line, err := p.out.ReadString('\n')
	if err != nil {
		fail(fmt.Errorf("%s: %v", p.name, err))
	}
	return strings.TrimSpace(line)
}

func (p *part) cmd(c string) string {
	p.Lock()
	defer p.Unlock()
	fmt.Fprintln(p.in, c)
	return p.reply()
}

func (p *part) stop() {
	if p.proc != nil {
		p.in.Close()
		p.proc.Wait()
	}
}

// usage is a process's CPU time and allocations so far.
type usage struct {
	cpu            time.Duration
	mallocs, bytes uint64
	rss            int64
}

func (a usage) sub(b usage) usage {
	return usage{cpu: a.cpu - b.cpu, mallocs: a.mallocs - b.mallocs, bytes: a.bytes - b.bytes, rss: a.rss}
}

func (p *part) stats(gc bool) usage {
	if p.proc == nil {
		return selfStats(gc)
	}
	c := "stats"
	if gc {
		c = "stats-gc"
	}
	var u usage
	var cpu int64
	fmt.Sscan(p.cmd(c), &cpu, &u.mallocs, &u.bytes, &u.rss)
	u.cpu = time.Duration(cpu)
	return u
}

func snap(parts []*part) []usage {
	s := make([]usage, len(parts))
	for i, p := range parts {
		s[i] = p.stats(false)
	}
	return s
}

func selfStats(gc bool) usage {
	if gc {
		runtime.GC()
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return usage{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), mallocs: ms.Mallocs, bytes: ms.TotalAlloc, rss: rss()}
}

// child serves one part and answers its parent's commands on stdin:
// stats (CPU ns, mallocs, bytes allocated, RSS), stats-gc (the same after
// a GC), profile PATH and stop (a CPU profile), heap PATH (the
// allocations profile). It ends at EOF.
func child(role string, args []string) {
	switch role {
	case "upstream":
		fmt.Printf("ready %s %s\n", upstream(), echoServer())
	case "relay":
		l, err := reaper.Relay("127.0.0.1:0", args[0])
		if err != nil {
			fail(err)
		}
		fmt.Printf("ready %s\n", l.Addr())
	case "gateway":
		if len(args) > 4 {
			runtime.MemProfileRate = 1
		}
		serveGateway(args[0], args[1], args[2], args[3])
		fmt.Println("ready")
	default:
		fail(fmt.Errorf("unknown part %q", role))
	}
	var pf *os.File
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 1 && (f[0] == "stats" || f[0] == "stats-gc"):
			u := selfStats(f[0] == "stats-gc")
			fmt.Println(int64(u.cpu), u.mallocs, u.bytes, u.rss)
		case len(f) == 2 && f[0] == "profile":
			var err error
			if pf, err = os.Create(f[1]); err != nil {
				fail(err)
			}
			pprof.StartCPUProfile(pf)
			fmt.Println("ok")
		case len(f) == 2 && f[0] == "heap":
			hf, err := os.Create(f[1])
			if err != nil {
				fail(err)
			}
			pprof.Lookup("allocs").WriteTo(hf, 0)
			hf.Close()
			fmt.Println("ok")
		case len(f) == 1 && f[0] == "stop":
			pprof.StopCPUProfile()
			pf.Close()
			fmt.Println("ok")
		default:
			fmt.Println("?")
		}
	}
}

// serveGateway serves a run's gateway on sock as the supervisor does:
// the built-in anthropic provider (credentials vault, pi, env, tried in
// that order) with its upstream at up, its key in the vault, settled (a
// vault key is written long before a run; the gateway rereads a key file
// changed within the last two seconds at every request), prices (so
// every call is priced), a ledger, and echo granted for the tunnels.
func serveGateway(up, echo, dir, sock string) {
	sources := creds.Creds{VaultDir: filepath.Join(dir, "vault"), PiDir: filepath.Join(dir, "pi")}
	if err := creds.PutVault(sources.VaultDir, "anthropic", strings.NewReader("sk-bench-key\n")); err != nil {
		fail(err)
	}
	p := creds.BuiltinProviders()["anthropic"]
	p.Upstream = "http://" + up
	g, err := gateway.New(gateway.Config{
		Worker: "bench", Run: "bench",
		Providers: map[string]creds.Provider{"anthropic": p},
		Granted:   []string{"anthropic"},
		Allow:     []string{echo},
		Prices:    map[string]gateway.Price{"claude-bench": {Input: 3, Output: 15}},
		Creds:     sources,
		Ledger:    filepath.Join(dir, "gateway.jsonl"),
	})
	if err != nil {
		fail(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		fail(err)
	}
	go g.Serve(l)
	time.Sleep(2100 * time.Millisecond)
}

// upstream is a fake model API: a small JSON answer, or a short stream.
func upstream() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("X-Api-Key") != "sk-bench-key" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if strings.Contains(string(b), `"stream":true`) {
			w.Header().Set("content-type", "text/event-stream")
			io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-bench\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n")
			w.(http.Flusher).Flush()
			io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":1}}\n\n")
			return
		}
		w.Header().Set("content-type", "application/json")
		w.Header().Set("request-id", "req_bench")
		io.WriteString(w, `{"id":"msg_b","type":"message","role":"assistant","model":"claude-bench","content":[{"type":"text","text":"."}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":1}}`)
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

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration{}, d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64{}, v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func us(d time.Duration) string { return fmt.Sprintf("%.0fµs", float64(d)/1e3) }

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(b))
}

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
