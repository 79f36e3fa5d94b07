package gateway

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/roster-sh/roster/lib/runs"
)

// egressProxy forwards absolute-URI http:// requests to granted targets.
type egressProxy struct {
	rp *httputil.ReverseProxy
	tr *http.Transport
}

type egressCall struct {
	t      target
	dial   netip.AddrPort // the address resolved and checked: the one dialed
	status int
	up     atomic.Int64
	down   atomic.Int64
}

type egressKey struct{}

func newEgressProxy(g *Gateway) *egressProxy {
	e := &egressProxy{}
	e.tr = &http.Transport{
		Proxy:               nil,
		DialContext:         g.cfg.Dial,
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true, // the box's Accept-Encoding, the box's decoding
	}
	e.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			c := pr.In.Context().Value(egressKey{}).(*egressCall)
			// Dial the checked address; the Host header keeps the name.
			pr.Out.URL.Host = c.dial.String()
			pr.Out.Host = pr.In.URL.Host
			if pr.Out.Body != nil {
				pr.Out.Body = &countingBody{rc: pr.Out.Body, n: &c.up}
			}
		},
		Transport:     e.tr,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			c := resp.Request.Context().Value(egressKey{}).(*egressCall)
			c.status = resp.StatusCode
			resp.Body = &meteredBody{rc: resp.Body, n: &c.down, w: io.Discard}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			c := r.Context().Value(egressKey{}).(*egressCall)
			if c.status != 0 {
				return
			}
			c.status = http.StatusBadGateway
			if !errors.Is(err, context.Canceled) {
				http.Error(w, "roster gateway: "+c.t.String()+" unreachable", http.StatusBadGateway)
			}
		},
		ErrorLog: log.New(io.Discard, "", 0),
	}
	return e
}

func (e *egressProxy) close() { e.tr.CloseIdleConnections() }

// admit decides a CONNECT or http target: the grant before any lookup,
// then the resolved addresses. It returns the addresses to dial, or the
// refusal; lookupErr is a failed lookup (502, not a refusal).
func (g *Gateway) admit(ctx context.Context, t target, def int) (addrs []netip.Addr, kind, msg string, lookupErr error) {
	if kind := g.grants.check(t, def); kind != "" {
		if kind == runs.RefuseIPLiteral {
			return nil, kind, t.String() + " is an address no [gateway] allow entry lists", nil
		}
		return nil, kind, t.String() + " is not in this worker's [gateway] allow", nil
	}
	if t.addr.IsValid() {
		return []netip.Addr{t.addr}, "", "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, g.lim.DialTimeout)
	defer cancel()
	found, err := g.cfg.Resolve(ctx, t.host)
	if err != nil {
		return nil, "", "", err
	}
	for _, a := range found {
		a = a.Unmap()
		if a.Zone() != "" {
			continue
		}
		if !refusedAddr(a) || g.grants.addrListed(a, t.port, def) {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		if len(found) == 0 {
			return nil, "", "", errors.New("no address")
		}
		return nil, runs.RefusePrivateAddress, t.host + " resolves to " + found[0].String() +
			", in a refused range (loopback, private, link-local, multicast, unspecified); an allow entry must list that address", nil
	}
	return addrs, "", "", nil
}

func (g *Gateway) serveConnect(w http.ResponseWriter, r *http.Request, start time.Time) {
	entry := runs.LedgerEntry{Kind: "connect", Method: http.MethodConnect}
	t, err := parseAuthority(r.Host, defaultConnectPort)
	if err != nil {
		g.refuse(w, r, start, refusal{kind: runs.RefuseBadRequest, msg: err.Error(), entry: entry})
		return
	}
	entry.Host, entry.Port = t.host, t.port
	addrs, kind, msg, lerr := g.admit(r.Context(), t, defaultConnectPort)
	if kind != "" {
		g.refuse(w, r, start, refusal{kind: kind, msg: msg, entry: entry, target: t.String()})
		return
	}
	fail := func(status int, why string) {
		http.Error(w, "roster gateway: "+why, status)
		entry.At, entry.Decision, entry.Status = start.UTC(), "allowed", status
		entry.MS = g.cfg.Now().Sub(start).Milliseconds()
		g.record(entry, t.String())
	}
	if lerr != nil {
		fail(http.StatusBadGateway, "cannot resolve "+t.host)
		return
	}
	var up net.Conn
	for _, a := range addrs {
		if up, err = g.cfg.Dial(r.Context(), "tcp", netip.AddrPortFrom(a, uint16(t.port)).String()); err == nil {
			break
		}
	}
	if up == nil {
		fail(http.StatusBadGateway, t.String()+" unreachable")
		return
	}
	rc := http.NewResponseController(w)
	box, brw, err := rc.Hijack()
	if err != nil {
		up.Close()
		fail(http.StatusInternalServerError, "cannot tunnel")
		return
	}
	if !g.track(box, up) {
		box.Close()
		up.Close()
		return
	}
	defer g.untrack(box, up)
	box.SetDeadline(time.Time{})
	if _, err := box.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		return
	}
	entry.At, entry.Decision, entry.Status, entry.Open = start.UTC(), "allowed", http.StatusOK, true
	g.record(entry, t.String())

	var upN, downN atomic.Int64
	defer func() { // every opened tunnel gets its closing line
		entry.Open = false
		entry.BytesUp, entry.BytesDn = upN.Load(), downN.Load()
		entry.MS = g.cfg.Now().Sub(start).Milliseconds()
		g.record(entry, t.String())
	}()
	if n := brw.Reader.Buffered(); n > 0 { // bytes the box sent right after its CONNECT
		b, _ := brw.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
		upN.Add(int64(n))
	}
	g.splice(box, up, &upN, &downN)
}

// splice copies both ways until either side ends or neither has sent a
// byte for TunnelIdle; then both are closed.
func (g *Gateway) splice(box, up net.Conn, upN, downN *atomic.Int64) {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	idle := g.lim.TunnelIdle
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn, n *atomic.Int64) {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 32<<10)
		for {
			src.SetReadDeadline(time.Now().Add(idle))
			k, err := src.Read(buf)
			if k > 0 {
				last.Store(time.Now().UnixNano())
				if _, werr := dst.Write(buf[:k]); werr != nil {
					return
				}
				n.Add(int64(k))
			}
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() && time.Since(time.Unix(0, last.Load())) < idle {
					continue // the other way was busy
				}
				if tc, ok := dst.(interface{ CloseWrite() error }); ok && err == io.EOF && tc.CloseWrite() == nil {
					return // half-closed: the other way may still carry an answer
				}
				box.Close()
				up.Close()
				return
			}
		}
	}
	go pipe(up, box, upN)
	go pipe(box, up, downN)
	<-done
	// One way ended. An EOF half-closed its peer; the other way may still
	// carry an answer, bounded by the idle rule. Anything else ends both.
	<-done
	box.Close()
	up.Close()
}

func (g *Gateway) track(cs ...net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	for _, c := range cs {
		g.tunnels[c] = struct{}{}
	}
	return true
}

func (g *Gateway) untrack(cs ...net.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range cs {
		delete(g.tunnels, c)
		c.Close()
	}
}

func (g *Gateway) serveHTTPProxy(w http.ResponseWriter, r *http.Request, start time.Time) {
	entry := runs.LedgerEntry{Kind: "http", Method: clip(r.Method, 20)}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		msg := "an absolute URI must be http://; https:// goes through CONNECT"
		if r.URL.Scheme == "http" {
			msg = "no host in the URI"
		}
		g.refuse(w, r, start, refusal{kind: runs.RefuseBadRequest, msg: msg, entry: entry})
		return
	}
	t, err := parseAuthority(r.URL.Host, defaultHTTPPort)
	if err != nil {
		g.refuse(w, r, start, refusal{kind: runs.RefuseBadRequest, msg: err.Error(), entry: entry})
		return
	}
	entry.Host, entry.Port = t.host, t.port
	addrs, kind, msg, lerr := g.admit(r.Context(), t, defaultHTTPPort)
	if kind != "" {
		g.refuse(w, r, start, refusal{kind: kind, msg: msg, entry: entry, target: t.String()})
		return
	}
	c := &egressCall{t: t}
	defer func() {
		rec := recover()
		entry.At, entry.Decision, entry.Status = start.UTC(), "allowed", c.status
		entry.BytesUp, entry.BytesDn = c.up.Load(), c.down.Load()
		entry.MS = g.cfg.Now().Sub(start).Milliseconds()
		g.record(entry, t.String())
		if rec != nil {
			panic(rec)
		}
	}()
	if lerr != nil {
		c.status = http.StatusBadGateway
		http.Error(w, "roster gateway: cannot resolve "+t.host, http.StatusBadGateway)
		return
	}
	c.dial = netip.AddrPortFrom(preferV4(addrs), uint16(t.port))
	r.Header.Del("Proxy-Authorization")
	if strings.EqualFold(r.Header.Get("Proxy-Connection"), "close") {
		w.Header().Set("Connection", "close")
	}
	fullDuplex(w)
	e := g.egress
	e.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), egressKey{}, c)))
}

// preferV4: a box's target is dialed over IPv4 when it has an IPv4
// address (hosts without an IPv6 route are common; the reverse is rare).
func preferV4(addrs []netip.Addr) netip.Addr {
	for _, a := range addrs {
		if a.Is4() {
			return a
		}
	}
	return addrs[0]
}
