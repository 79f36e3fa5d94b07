package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roster-sh/roster/lib/creds"
	"github.com/roster-sh/roster/lib/runs"
)

// modelProxy is the reverse proxy of every model route.
type modelProxy struct {
	g  *Gateway
	rp *httputil.ReverseProxy
	tr *http.Transport
}

// upstream is a provider's upstream, with what every call needs of it
// worked out once.
type upstream struct {
	url   *url.URL
	base  string // url's escaped path, without a trailing slash
	route string // "/NAME"
	host  string
	port  int
	paths routePaths
}

// modelCall is one model request on its way through the proxy: one
// allocation holds all it needs (its bodies' wrappers and usage reader
// included).
type modelCall struct {
	p        creds.Provider
	upstream *upstream
	cred     creds.Credential
	rest     string // the path after /PROVIDER, escaped
	req      *modelRequest
	cut      bool // the answer's body ended in an error (a broken stream)
	status   int
	reqID    string
	usage    *usageReader // nil until the answer begins
	up, down atomic.Int64

	upBody   countingBody
	downBody meteredBody
	reader   usageReader
}

type callKey struct{}

// callOf finds the model call a proxied request belongs to: on a box's
// connection (one request at a time) its gwConn holds it; a request
// served otherwise carries it in its context.
func callOf(r *http.Request) *modelCall {
	if gc, _ := r.Context().Value(connKey{}).(*gwConn); gc != nil && gc.call != nil {
		return gc.call
	}
	return r.Context().Value(callKey{}).(*modelCall)
}

func newModelProxy(g *Gateway) *modelProxy {
	m := &modelProxy{g: g}
	m.tr = &http.Transport{
		Proxy:                 nil, // upstreams are dialed directly
		DialContext:           g.cfg.Dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   g.lim.DialTimeout,
		ExpectContinueTimeout: time.Second,
	}
	m.rp = &httputil.ReverseProxy{
		Rewrite:   m.rewrite,
		Transport: m.tr,
		// Server-sent events and answers of unknown length are flushed as
		// they come (ReverseProxy does so whatever FlushInterval says); an
		// answer of known length goes down in as few writes as it can.
		FlushInterval:  0,
		ModifyResponse: m.modifyResponse,
		ErrorHandler:   m.errorHandler,
		ErrorLog:       log.New(io.Discard, "", 0),
		BufferPool:     copyBuffers{},
	}
	return m
}

// copyBuffers lends ReverseProxy the buffer it copies an answer through:
// without a pool it makes a fresh 32 KiB one per request, which was most
// of the bytes a model call allocated (and so most of the collector's
// work). The pool holds array pointers, so lending costs no allocation.
type copyBuffers struct{}

const copyBufferSize = 32 << 10

var copyBufferPool = sync.Pool{New: func() any { return new([copyBufferSize]byte) }}

func (copyBuffers) Get() []byte { return copyBufferPool.Get().(*[copyBufferSize]byte)[:] }

func (copyBuffers) Put(b []byte) {
	if len(b) == copyBufferSize {
		copyBufferPool.Put((*[copyBufferSize]byte)(b))
	}
}

func (m *modelProxy) close() { m.tr.CloseIdleConnections() }

// oauthBeta is the anthropic-beta feature the Messages API requires with
// an OAuth access token (pi's anthropic provider sends it, with
// claude-code-20250219, whenever its key is sk-ant-oat...).
const oauthBeta = "oauth-2025-04-20"

func (m *modelProxy) rewrite(pr *httputil.ProxyRequest) {
	c := callOf(pr.In)
	out := pr.Out
	u := *c.upstream.url
	escaped := c.rest
	if c.upstream.base != "" {
		escaped = c.upstream.base + c.rest
	}
	if escaped == "" {
		escaped = "/"
	}
	u.Path, u.RawPath = escaped, ""
	if p, err := url.PathUnescape(escaped); err == nil && p != escaped {
		u.Path, u.RawPath = p, escaped
	}
	u.RawQuery = pr.In.URL.RawQuery
	*out.URL = u // out.URL is the request's own copy (Request.Clone)
	out.Host = ""
	// One pass over the names sent (not one canonicalised Del per listed
	// name): every spelling of a listed or credential-like name goes.
	for name := range out.Header {
		if credentialHeader(name) {
			delete(out.Header, name)
		}
	}
	// The upstream's answer must reach the usage reader uncompressed:
	// without this header the transport asks for gzip and decodes it.
	// (The names below are canonical already: the map is used directly.)
	h := out.Header
	delete(h, "Accept-Encoding")
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = []string{""} // no Go default
	}
	switch {
	case c.p.Style == creds.StyleAnthropic && c.cred.OAuth:
		h["Authorization"] = []string{"Bearer " + c.cred.Value}
		h["Anthropic-Beta"] = []string{withBeta(h["Anthropic-Beta"], oauthBeta, true)}
	case c.p.Style == creds.StyleAnthropic:
		h["X-Api-Key"] = []string{c.cred.Value}
		if vs := h["Anthropic-Beta"]; len(vs) > 0 {
			if b := withBeta(vs, oauthBeta, false); b != "" {
				h["Anthropic-Beta"] = []string{b}
			} else {
				delete(h, "Anthropic-Beta")
			}
		}
	default:
		h["Authorization"] = []string{"Bearer " + c.cred.Value}
	}
	if out.Body != nil {
		c.upBody = countingBody{rc: out.Body, n: &c.up}
		out.Body = &c.upBody
	}
}

// withBeta returns the anthropic-beta list with feature added (add) or
// removed: the feature follows the credential injected, not the
// placeholder the client's request was shaped by.
func withBeta(values []string, feature string, add bool) string {
	var keep []string
	for _, v := range values {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" && f != feature {
				keep = append(keep, f)
			}
		}
	}
	if add {
		keep = append(keep, feature)
	}
	return strings.Join(keep, ",")
}

func (m *modelProxy) modifyResponse(resp *http.Response) error {
	c := callOf(resp.Request)
	c.status = resp.StatusCode
	c.reqID = clip(firstNonEmpty(resp.Header.Get("Request-Id"), resp.Header.Get("X-Request-Id")), 200)
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		resp.Header.Set("X-Roster-Refusal", runs.RefuseCredentialRejected)
	}
	ct := resp.Header.Get("Content-Type")
	c.downBody = meteredBody{rc: resp.Body, n: &c.down, cut: &c.cut, w: io.Discard}
	if c.req.infer && usageBearing(resp.StatusCode, ct) {
		c.reader.init(c.p.Style, isEventStream(ct))
		c.usage = &c.reader
		c.downBody.w = c.usage
	}
	resp.Body = &c.downBody
	return nil
}

// isEventStream tells a text/event-stream media type (parameters and
// case aside): what mime.ParseMediaType would name it, without its map.
func isEventStream(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/event-stream")
}

func (m *modelProxy) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	c := callOf(r)
	if c.status != 0 {
		return // the answer had begun: the copy was cut, nothing more to say
	}
	c.status = http.StatusBadGateway
	if errors.Is(err, context.Canceled) {
		return // the box went away
	}
	writeProviderError(w, c.p, http.StatusBadGateway, "api_error", "roster gateway: "+c.p.Name+" upstream "+c.upstream.url.Host+" unreachable")
}

func writeProviderError(w http.ResponseWriter, p creds.Provider, status int, typ, msg string) {
	var body any
	if p.Style == creds.StyleAnthropic {
		body = map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}}
	} else {
		body = map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": nil, "param": nil}}
	}
	data, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(data, '\n'))
}

// serve answers one request to /PROVIDER/...: grant, budget and
// credential checks, then the proxy, then the ledger line.
func (m *modelProxy) serve(w http.ResponseWriter, r *http.Request, p creds.Provider, start time.Time) {
	g := m.g
	up := g.upstreams[p.Name]
	rest := strings.TrimPrefix(r.URL.EscapedPath(), up.route)
	entry := runs.LedgerEntry{Kind: "model", Provider: p.Name, Method: clip(r.Method, 20),
		Host: up.host, Port: up.port, Path: clip(rest, 256)}
	if entry.Path == "" {
		entry.Path = "/"
	}
	rf := refusal{style: p.Style, entry: entry, target: up.route}
	if dotSegment(r.URL.Path) {
		rf.kind, rf.msg = runs.RefuseBadRequest, "a path with . or .. segments"
		g.refuse(w, r, start, rf)
		return
	}
	if !g.granted[p.Name] {
		rf.kind, rf.msg = runs.RefuseProviderNotGranted, "this worker's [gateway] providers do not include "+p.Name
		g.refuse(w, r, start, rf)
		return
	}
	if !up.paths.allows(r.Method, rest) {
		rf.kind, rf.msg = runs.RefuseRouteDenied, "the "+p.Name+" route forwards inference only; "+clip(r.Method, 20)+" "+clip(rest, 120)+" is not among its paths (org.toml [gateway."+p.Name+"] paths adds one)"
		g.refuse(w, r, start, rf)
		return
	}
	mr, err := readModelRequest(r)
	if err != nil {
		rf.kind, rf.msg = refusalFor(err)
		g.refuse(w, r, start, rf)
		return
	}
	mr.infer = inference(r.Method, rest)
	if mr.wantsUsageOption(p, rest) {
		mr.body = mr.withUsageOption()
	}
	mr.setBody(r)
	price, priced := g.priceOf(mr.model)
	if b := g.cfg.Budget; b != nil && b.USD > 0 && mr.infer && !priced {
		rf.kind, rf.msg, rf.hint = runs.RefuseModelUnpriced, "model "+strconv.Quote(mr.model)+" has no price, and a proactive_usd budget cannot count it", "use a priced model, or the operator adds its price (org.toml [prices])"
		g.refuse(w, r, start, rf)
		return
	}
	if why := g.budgetSpent(); why != "" {
		rf.kind, rf.msg = runs.RefuseBudgetSpent, why
		g.refuse(w, r, start, rf)
		return
	}
	cred, err := creds.Lookup(p, g.cfg.Creds, g.cfg.Now())
	if err != nil {
		// The box is told the kind, not the host's paths.
		if errors.Is(err, creds.ErrCredentialExpired) {
			rf.kind, rf.msg, rf.hint = runs.RefuseCredentialExpired, p.Name+" login on the host has expired", "the operator must run pi on the host"
		} else {
			rf.kind, rf.msg, rf.hint = runs.RefuseNoCredential, "no "+p.Name+" credential on the host", "the operator must store one"
		}
		g.refuse(w, r, start, rf)
		return
	}
	release, why := g.takeTurn(r.Context(), mr, price, priced)
	if why != "" {
		rf.kind, rf.msg = runs.RefuseBudgetSpent, why
		g.refuse(w, r, start, rf)
		return
	}
	if release == nil {
		return // the box went away while its call waited
	}
	defer release()
	c := &modelCall{p: p, upstream: up, cred: cred, rest: rest, req: mr}
	fullDuplex(w)
	if gc, _ := r.Context().Value(connKey{}).(*gwConn); gc != nil {
		gc.call = c
		defer func() { gc.call = nil }()
	} else {
		r = r.WithContext(context.WithValue(r.Context(), callKey{}, c))
	}
	// ReverseProxy panics with http.ErrAbortHandler when a stream is cut
	// mid-copy; the call is recorded all the same, then the panic goes on
	// so that net/http aborts the connection.
	defer func() {
		rec := recover()
		m.record(c, entry, start)
		if rec != nil {
			panic(rec)
		}
	}()
	m.rp.ServeHTTP(w, r)
}

func (m *modelProxy) record(c *modelCall, entry runs.LedgerEntry, start time.Time) {
	g := m.g
	entry.At = start.UTC()
	entry.Status = c.status
	entry.BytesUp = c.up.Load()
	entry.BytesDn = c.down.Load()
	entry.RequestID = c.reqID
	entry.Decision = "allowed"
	if c.status == http.StatusUnauthorized || c.status == http.StatusForbidden {
		entry.Decision = "refused"
		entry.Refusal = runs.RefuseCredentialRejected
	}
	var u callUsage
	if c.usage != nil {
		u = c.usage.result()
		if !u.final || c.cut {
			estimate(&u, int64(len(c.req.body)), entry.BytesDn)
			entry.Estimated = true
		}
	}
	if u.Model == "" {
		u.Model = c.req.model
	}
	entry.Model = u.Model
	entry.InputTokens, entry.OutputTokens = u.Input, u.Output
	entry.CacheReadTokens, entry.CacheWriteTokens = u.CacheRead, u.CacheWrite
	if cost, priced := g.account(u, c.req.model, entry.Estimated); priced {
		entry.CostUSD = &cost
	}
	entry.MS = g.cfg.Now().Sub(start).Milliseconds()
	g.record(entry, c.upstream.route)
}

// budgetSpent says why the budget refuses a model call now, or "".
func (g *Gateway) budgetSpent() string {
	b := g.cfg.Budget
	if b == nil {
		return ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	tokens, usd := g.spentLocked()
	return spentWhy(b, tokens, usd)
}

// spentLocked is the day's proactive spend so far, this run's included
// (g.mu held; a budget set).
func (g *Gateway) spentLocked() (int64, float64) {
	b := g.cfg.Budget
	return b.SpentTokens + g.usage.InputTokens + g.usage.OutputTokens, b.SpentUSD + g.usd
}

// account adds a call's usage to the run's and returns its cost, and
// whether the model is priced.
func (g *Gateway) account(u callUsage, asked string, estimated bool) (float64, bool) {
	price, priced := g.priceOf(u.Model)
	if !priced {
		// The model the request named prices an answer naming another
		// (an alias the price list lacks cannot step around the budget).
		price, priced = g.priceOf(asked)
	}
	var cost float64
	if priced {
		cost = (float64(u.Input)*price.Input + float64(u.Output)*price.Output +
			float64(u.CacheRead)*price.CacheRead + float64(u.CacheWrite)*price.CacheWrite) / 1e6
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.usage.ModelCalls++
	g.usage.InputTokens += u.Input
	g.usage.OutputTokens += u.Output
	g.usage.CacheReadTokens += u.CacheRead
	g.usage.CacheWriteTokens += u.CacheWrite
	if estimated {
		g.estimated++
	}
	if priced {
		g.usd += cost
	} else if u.sawUsage || estimated {
		g.unpriced++
	}
	return cost, priced
}

// priceOf finds a model's price: its exact name, else the longest priced
// name it extends with "-" (claude-sonnet-4-5-20250929 takes
// claude-sonnet-4-5's price), the rule usage re-prices by (runs.RateOf).
func (g *Gateway) priceOf(model string) (Price, bool) { return runs.RateOf(g.cfg.Prices, model) }

func portOf(u *url.URL) int {
	if p := u.Port(); p != "" {
		n, _ := strconv.Atoi(p)
		return n
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// countingBody counts a request body's bytes on their way up.
type countingBody struct {
	rc io.ReadCloser
	n  *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.n.Add(int64(n))
	return n, err
}
func (b *countingBody) Close() error { return b.rc.Close() }

// meteredBody counts a response body's bytes and shows them to the usage
// reader on their way down.
type meteredBody struct {
	rc  io.ReadCloser
	n   *atomic.Int64
	cut *bool
	w   io.Writer
}

func (b *meteredBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.n.Add(int64(n))
		b.w.Write(p[:n])
	}
	if err != nil && err != io.EOF {
		*b.cut = true
	}
	return n, err
}
func (b *meteredBody) Close() error { return b.rc.Close() }

// fullDuplex keeps net/http from consuming the rest of a request body when
// the response begins: a proxy's upstream may answer (and stream) while
// its transport still reads the body, and without this the two race and
// the upstream connection is cut mid-answer.
func fullDuplex(w http.ResponseWriter) { http.NewResponseController(w).EnableFullDuplex() }

// dotSegment: a model path may not climb out of the provider's upstream
// base path (an upstream such as https://llm.corp/anthropic).
func dotSegment(p string) bool {
	for p != "" {
		seg, rest, _ := strings.Cut(p, "/")
		if seg == "." || seg == ".." {
			return true
		}
		p = rest
	}
	return false
}
