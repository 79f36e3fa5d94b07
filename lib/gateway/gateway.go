package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/roster-sh/roster/lib/creds"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/repos"
	"github.com/roster-sh/roster/lib/runs"
)

// Price is USD per million tokens of each kind.
type Price = runs.Rate

// Budget is a proactive run's day: limits (0 = none) and what the worker
// spent earlier today; the gateway adds this run's own usage as it goes.
type Budget struct {
	Tokens      int64 // input+output tokens per worker per local day
	USD         float64
	SpentTokens int64
	SpentUSD    float64
}

// Usage is a run's model usage as its gateway measured it. USD is set when
// every call that reported tokens was priced.
type Usage struct {
	ModelCalls                                                   int
	InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int64
	USD                                                          *float64
	Estimated                                                    bool // some call's usage was estimated
}

// Limits bound what a hostile box can make the gateway hold; zero fields
// take the defaults below.
type Limits struct {
	MaxConns          int           // concurrent connections; excess ones wait in the listener's backlog (512)
	MaxHeaderBytes    int           // request head (64 KiB; net/http answers 431 past it)
	ReadHeaderTimeout time.Duration // to send a request head (10s)
	IdleTimeout       time.Duration // a kept-alive connection between requests (2m)
	TunnelIdle        time.Duration // a tunnel with no byte either way (5m)
	DialTimeout       time.Duration // resolving and dialing a target (10s)
	CloseWait         time.Duration // Close waits this long for handlers after closing their connections (5s)
}

func (l Limits) withDefaults() Limits {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if l.MaxConns <= 0 {
		l.MaxConns = 512
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = 64 << 10
	}
	def(&l.ReadHeaderTimeout, 10*time.Second)
	def(&l.IdleTimeout, 2*time.Minute)
	def(&l.TunnelIdle, 5*time.Minute)
	def(&l.DialTimeout, 10*time.Second)
	def(&l.CloseWait, 5*time.Second)
	return l
}

// Config is one run's gateway.
type Config struct {
	Worker, Run string
	Providers   map[string]creds.Provider // all the org knows (org.toml merged over BuiltinProviders)
	Granted     []string                  // the worker's [gateway] providers
	Allow       []string                  // the worker's [gateway] allow
	Prices      map[string]Price          // by model name
	Creds       creds.Creds
	Budget      *Budget // nil: none (owner work is never refused for budget)
	// Inflight bounds the run's model calls at once; more wait (0:
	// DefaultInflight).
	Inflight  int
	Ledger    string // runs/RUN/gateway.jsonl ("" = none, tests only)
	LedgerMax int64  // 0 = DefaultLedgerMax
	Now       func() time.Time
	Resolve   func(ctx context.Context, host string) ([]netip.Addr, error) // nil = net.DefaultResolver
	// Dial opens every upstream connection the gateway makes (a model
	// provider's, a CONNECT tunnel's, a plain http:// request's); nil = a
	// net.Dialer bounded by Limits.DialTimeout. Tests set one that refuses
	// anything but loopback.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Self are the host:port forms by which a box names the gateway itself
	// (nil = DefaultSelf): an absolute http:// URI to one, from a client
	// that proxies even loopback, is served as the route it names.
	Self   []string
	Limits Limits
	// Git serves the worker's [[repo]] grants at /git/NAME/... (nil: none).
	Git *repos.Service
}

// Gateway serves one run's box.
type Gateway struct {
	cfg       Config
	lim       Limits
	grants    grants
	granted   map[string]bool
	upstreams map[string]*upstream
	ledger    *ledger
	srv       *http.Server
	model     *modelProxy
	egress    *egressProxy

	mu       sync.Mutex
	closed   bool
	handlers sync.WaitGroup
	tunnels  map[net.Conn]struct{}
	sum      runs.GatewaySummary
	usage    Usage
	usd      float64 // priced spend of this run
	unpriced int     // calls with tokens but no price
	pushes   []runs.GitRef

	slots     chan struct{} // model calls in flight (Config.Inflight)
	reserved  reservation   // what admitted calls still hold (admit.go)
	holding   int           // calls holding a reservation
	settled   chan struct{} // closed (and replaced) at each settle
	estimated int           // calls whose usage was estimated
}

// New validates cfg (an unknown granted provider or a bad allow entry is an
// error naming it) and opens the ledger.
func New(cfg Config) (*Gateway, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Resolve == nil {
		cfg.Resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	g := &Gateway{cfg: cfg, lim: cfg.Limits.withDefaults(), granted: map[string]bool{},
		upstreams: map[string]*upstream{}, tunnels: map[net.Conn]struct{}{}, settled: make(chan struct{})}
	if cfg.Inflight <= 0 {
		cfg.Inflight = DefaultInflight
	}
	g.slots = make(chan struct{}, cfg.Inflight)
	if g.cfg.Dial == nil {
		g.cfg.Dial = (&net.Dialer{Timeout: g.lim.DialTimeout, KeepAlive: 30 * time.Second}).DialContext
	}
	g.sum.Refusals = map[string]int{}
	for name, p := range cfg.Providers {
		if p.Name == "" {
			p.Name = name
			cfg.Providers[name] = p
		}
		if p.Name != name || !creds.ValidProviderName(name) || name == "git" {
			return nil, fmt.Errorf("gateway provider %q: bad name: %w", name, errs.ErrUsage)
		}
		if p.Style != creds.StyleAnthropic && p.Style != creds.StyleOpenAI {
			return nil, fmt.Errorf("gateway provider %s: style %q: want anthropic or openai: %w", name, p.Style, errs.ErrUsage)
		}
		u, err := url.Parse(p.Upstream)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("gateway provider %s: upstream %q: want http(s)://HOST[:PORT][/PATH]: %w", name, p.Upstream, errs.ErrUsage)
		}
		for _, src := range p.Credentials {
			if err := creds.CheckSource(src); err != nil {
				return nil, fmt.Errorf("gateway provider %s: %w", name, err)
			}
		}
		g.upstreams[name] = &upstream{url: u, base: strings.TrimSuffix(u.EscapedPath(), "/"), route: "/" + name,
			host: u.Hostname(), port: portOf(u), paths: newRoutePaths(p)}
	}
	for _, name := range cfg.Granted {
		if _, ok := cfg.Providers[name]; !ok {
			return nil, fmt.Errorf("gateway: granted provider %q is not defined (built in: anthropic, openai; others in org.toml [gateway.NAME]): %w", name, errs.ErrUsage)
		}
		g.granted[name] = true
	}
	var err error
	if g.grants, err = parseGrants(cfg.Allow); err != nil {
		return nil, err
	}
	if g.ledger, err = openLedger(cfg.Ledger, cfg.LedgerMax, cfg.Now); err != nil {
		return nil, err
	}
	g.model = newModelProxy(g)
	g.egress = newEgressProxy(g)
	g.srv = &http.Server{
		Handler:           g,
		ReadHeaderTimeout: g.lim.ReadHeaderTimeout,
		IdleTimeout:       g.lim.IdleTimeout,
		MaxHeaderBytes:    g.lim.MaxHeaderBytes,
		ErrorLog:          log.New(io.Discard, "", 0), // lib/ never prints
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if gc, ok := c.(*gwConn); ok {
				return context.WithValue(ctx, connKey{}, gc)
			}
			return ctx
		},
	}
	return g, nil
}

// Serve answers connections from l until Close. In production l is the
// run's Unix socket.
func (g *Gateway) Serve(l net.Listener) error {
	ll := &limitListener{Listener: l, sem: make(chan struct{}, g.lim.MaxConns), done: make(chan struct{}),
		maxHead: g.lim.MaxHeaderBytes + 4096}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		l.Close()
		return nil
	}
	g.mu.Unlock()
	err := g.srv.Serve(ll)
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if errors.Is(err, http.ErrServerClosed) || closed && errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Close stops accepting, closes every connection and tunnel (in-flight
// model calls are cut), waits at most Limits.CloseWait for their handlers
// to record them, and flushes and closes the ledger.
func (g *Gateway) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	g.mu.Unlock()
	g.srv.Close() // closes the listeners and every connection it tracks
	g.mu.Lock()
	for c := range g.tunnels {
		c.Close()
	}
	g.mu.Unlock()
	done := make(chan struct{})
	go func() { g.handlers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(g.lim.CloseWait):
	}
	g.model.close()
	g.egress.close()
	return g.ledger.close()
}

// Pushes are the refs the run's git pushes asked to update, in order,
// with their outcomes (run.json's git.pushes).
func (g *Gateway) Pushes() []runs.GitRef {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]runs.GitRef(nil), g.pushes...)
}

// Knowledge is run.json's git.knowledge: the run's knowledge access and
// what it landed (nil: the run had none).
func (g *Gateway) Knowledge() *runs.GitKnowledge {
	if g.cfg.Git == nil || g.cfg.Git.Knowledge == nil {
		return nil
	}
	return g.cfg.Git.Knowledge.Record(g.cfg.Git.Run)
}

// Summary is run.json's gateway summary and cost figures so far.
func (g *Gateway) Summary() (runs.GatewaySummary, Usage) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.sum
	s.Refusals = make(map[string]int, len(g.sum.Refusals))
	for k, v := range g.sum.Refusals {
		s.Refusals[k] = v
	}
	if s.LastRefusal != nil {
		lr := *s.LastRefusal
		s.LastRefusal = &lr
	}
	u := g.usage
	u.Estimated = g.estimated > 0
	if u.ModelCalls > 0 && g.unpriced == 0 {
		usd := g.usd
		u.USD = &usd
	}
	return s, u
}

// begin registers a handler so Close can wait for it; false once closed.
func (g *Gateway) begin() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.handlers.Add(1)
	return true
}

// record writes e to the ledger and counts it; target names a refusal.
func (g *Gateway) record(e runs.LedgerEntry, target string) {
	if !e.Open {
		g.mu.Lock()
		g.sum.Requests++
		if e.Decision == "refused" {
			// (a copy: what the summary keeps must not make e escape,
			// and every allowed call's entry with it)
			kind := strings.Clone(e.Refusal)
			g.sum.Refused++
			g.sum.Refusals[kind]++
			g.sum.LastRefusal = &runs.LastRefusal{Kind: kind, Target: clip(target, 200)}
		}
		g.mu.Unlock()
	}
	g.ledger.add(e)
}

type connKey struct{}

func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.begin() {
		w.Header().Set("Connection", "close")
		http.Error(w, "roster gateway: closing", http.StatusServiceUnavailable)
		return
	}
	defer g.handlers.Done()
	start := g.cfg.Now()
	if gc, _ := r.Context().Value(connKey{}).(*gwConn); gc != nil {
		if gc.framing.ambiguous.Load() {
			w.Header().Set("Connection", "close")
			g.refuse(w, r, start, refusal{kind: runs.RefuseBadRequest, msg: "an ambiguous request head (both Content-Length and Transfer-Encoding, or a folded header line) is refused as request smuggling"})
			return
		}
		if gc.framing.lost.Load() && r.Method != http.MethodConnect {
			w.Header().Set("Connection", "close")
		}
	}
	switch {
	case r.Method == http.MethodConnect:
		// The framing guard stops following at a CONNECT; a CONNECT that
		// is not tunnelled therefore ends its connection.
		w.Header().Set("Connection", "close")
		g.serveConnect(w, r, start)
	case r.Header.Get("Upgrade") != "":
		w.Header().Set("Connection", "close")
		g.refuse(w, r, start, refusal{kind: runs.RefuseBadRequest, msg: "protocol upgrades are not served"})
	case !strings.HasPrefix(r.RequestURI, "/") && !(r.URL.Scheme == "http" && g.isSelf(r.URL.Host)):
		g.serveHTTPProxy(w, r, start)
	default:
		name, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if name == "git" {
			g.serveGit(w, r, start)
			return
		}
		if p, ok := g.cfg.Providers[name]; ok && name != "" {
			g.model.serve(w, r, p, start)
			return
		}
		g.refuse(w, r, start, refusal{kind: runs.RefuseBadRequest,
			msg: "not a model route (/PROVIDER/...), a git route (/git/NAME/...), a CONNECT or an http:// proxy request"})
	}
}

// DefaultSelf is where the in-box relay listens (docs/gateway.md).
var DefaultSelf = []string{"127.0.0.1:3128", "localhost:3128", "[::1]:3128"}

func (g *Gateway) isSelf(host string) bool {
	self := g.cfg.Self
	if self == nil {
		self = DefaultSelf
	}
	for _, s := range self {
		if strings.EqualFold(host, s) {
			return true
		}
	}
	return false
}

// refusal is one refused request: what the box is told and what the
// ledger records.
type refusal struct {
	kind   string
	msg    string
	hint   string
	style  string // a model route's provider style: the body takes its error shape ("" = none)
	entry  runs.LedgerEntry
	target string
}

// refuse answers 403 with X-Roster-Refusal and records the refusal.
func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, start time.Time, rf refusal) {
	text := "roster gateway: " + rf.kind + ": " + rf.msg
	if rf.hint != "" {
		text += " (" + rf.hint + ")"
	}
	var body any
	switch {
	case rf.style == creds.StyleAnthropic:
		body = map[string]any{"type": "error", "error": map[string]string{"type": "permission_error", "message": text}}
	case rf.style != "":
		body = map[string]any{"error": map[string]any{"message": text, "type": "permission_error", "code": rf.kind, "param": nil}}
	default:
		body = map[string]string{"refusal": rf.kind, "message": text}
	}
	data, _ := json.Marshal(body)
	h := w.Header()
	h.Set("X-Roster-Refusal", rf.kind)
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusForbidden)
	w.Write(append(data, '\n'))

	e := rf.entry
	e.At = start.UTC()
	if e.Method == "" {
		e.Method = clip(r.Method, 20)
	}
	e.Decision = "refused"
	e.Refusal = rf.kind
	e.Status = http.StatusForbidden
	e.BytesDn = int64(len(data) + 1)
	e.MS = g.cfg.Now().Sub(start).Milliseconds()
	// The Host header is a header value: never in the ledger. A refusal
	// without a target is named by its request line's target.
	target := rf.target
	if target == "" {
		target = clip(r.RequestURI, 100)
	}
	g.record(e, target)
}

// limitListener bounds concurrent connections: Accept takes a slot before
// accepting, so excess connections wait in the kernel's backlog (and past
// it are refused by the kernel), and memory stays bounded whatever a box
// opens. A connection gives its slot back when closed.
type limitListener struct {
	net.Listener
	sem     chan struct{}
	done    chan struct{}
	once    sync.Once
	maxHead int
}

func (l *limitListener) shut() { l.once.Do(func() { close(l.done); l.Listener.Close() }) }

func (l *limitListener) Close() error {
	l.shut()
	return nil
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &gwConn{Conn: c, framing: newFraming(l.maxHead), release: func() { <-l.sem }}, nil
}

// gwConn is a box's connection: its framing is followed as it is read.
type gwConn struct {
	net.Conn
	framing *framing
	once    sync.Once
	release func()
	call    *modelCall // the model call being served on it (one at a time)
}

func (c *gwConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.framing.feed(p[:n])
	}
	return n, err
}

// CloseWrite half-closes a tunnel's box side.
func (c *gwConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

func (c *gwConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
