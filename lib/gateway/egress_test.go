package gateway

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/roster-sh/roster/lib/creds"
	"github.com/roster-sh/roster/lib/runs"
)

// echoServer accepts TCP on 127.0.0.1 and echoes each connection; it
// counts connections (a refused target must never be dialed).
func echoServer(t *testing.T) (addr string, conns func() int) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return l.Addr().String(), func() int { return int(n.Load()) }
}

// connect sends CONNECT target on a fresh connection and returns the
// answer's status and refusal header, and the connection when tunnelled.
func (r *rig) connect(target string) (*http.Response, net.Conn, *bufio.Reader) {
	r.t.Helper()
	c := r.dial()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil {
		r.t.Fatalf("CONNECT %s: %v", target, err)
	}
	return resp, c, br
}

func TestConnectToGrantedAddress(t *testing.T) {
	addr, conns := echoServer(t)
	r := newRig(t, Config{Providers: creds.BuiltinProviders(), Allow: []string{addr}})
	resp, c, br := r.connect(addr)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	io.WriteString(c, "ping\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("echo %q %v", line, err)
	}
	c.Close()
	ls := r.lines()
	if len(ls) != 2 || !ls[0].Open || ls[1].Open || ls[0].Kind != "connect" || ls[1].BytesUp != 5 || ls[1].BytesDn != 5 ||
		ls[1].Host != "127.0.0.1" || ls[1].Decision != "allowed" || ls[1].Status != 200 {
		t.Fatalf("ledger %+v", ls)
	}
	if conns() != 1 || len(r.dns.called()) != 0 {
		t.Fatalf("dials %d, lookups %v", conns(), r.dns.called())
	}
	if sum, _ := r.g.Summary(); sum.Requests != 1 {
		t.Fatalf("a tunnel counts once: %+v", sum)
	}
}

// A granted name is resolved by the gateway and the resolved address is
// the one dialed; the bytes the box sends right after CONNECT get through.
func TestConnectResolvesGrantedNameAndDialsTheAddress(t *testing.T) {
	addr, _ := echoServer(t)
	ap := netip.MustParseAddrPort(addr)
	r := newRig(t, Config{Providers: creds.BuiltinProviders(),
		Allow: []string{fmt.Sprintf("*.example.test:%d", ap.Port()), fmt.Sprintf("127.0.0.1:%d", ap.Port())}})
	r.dns.names["git.example.test"] = []netip.Addr{ap.Addr()}
	c := r.dial()
	fmt.Fprintf(c, "CONNECT git.example.test:%d HTTP/1.1\r\nHost: x\r\n\r\nearly\n", ap.Port())
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	if line, _ := br.ReadString('\n'); line != "early\n" {
		t.Fatalf("early bytes: %q", line)
	}
	c.Close()
	if got := r.dns.called(); len(got) != 1 || got[0] != "git.example.test" {
		t.Fatalf("lookups %v", got)
	}
}

func TestHTTPToGrantedAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s %s auth=%s", r.Host, r.URL.Path, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	r := newRig(t, Config{Providers: creds.BuiltinProviders(), Allow: []string{host}})
	r.client.Transport.(*http.Transport).Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: "gateway"})
	resp, err := r.client.Get(srv.URL + "/simple/pkg/?q=1")
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	// The box's own Authorization to its target is its business: kept.
	if resp.StatusCode != 200 || body != "hello "+host+" /simple/pkg/ auth=" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	e := r.lines()[0]
	if e.Kind != "http" || e.Method != "GET" || e.Host != "127.0.0.1" || e.Path != "" || e.Status != 200 || e.BytesDn != int64(len(body)) {
		t.Fatalf("%+v", e)
	}
}

func TestEgressRefusals(t *testing.T) {
	addr, conns := echoServer(t)
	r := newRig(t, Config{Providers: creds.BuiltinProviders(),
		Allow: []string{"granted.test", "*.granted.test", "pkgs.example", "10.9.0.0/16:5432"}})
	r.dns.names["granted.test"] = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	r.dns.names["lan.granted.test"] = []netip.Addr{netip.MustParseAddr("192.168.1.20"), netip.MustParseAddr("::ffff:10.0.0.1")}
	r.dns.names["cgnat.granted.test"] = []netip.Addr{netip.MustParseAddr("100.64.1.1")}
	r.dns.names["v6.granted.test"] = []netip.Addr{netip.MustParseAddr("fe80::1"), netip.MustParseAddr("fd00::1")}

	for _, tc := range []struct{ target, kind string }{
		{"elsewhere.example:443", runs.RefuseHostDenied},
		{"granted.test:22", runs.RefuseHostDenied},    // the grant's port is 443
		{"x.pkgs.example:443", runs.RefuseHostDenied}, // pkgs.example grants no subdomain
		{"granted.test.:8443", runs.RefuseHostDenied},
		{addr, runs.RefuseIPLiteral},
		{"10.9.1.1:443", runs.RefuseIPLiteral}, // the CIDR is listed for 5432 only
		{"[::1]:443", runs.RefuseIPLiteral},
		// Public address literals, not granted: refused as literals, never
		// looked up or dialed (the rig's loopbackOnly fails the test if
		// the gateway dials anything but loopback).
		{"8.8.8.8:443", runs.RefuseIPLiteral},
		{"140.82.112.3:443", runs.RefuseIPLiteral},
		{"[2606:4700::1111]:443", runs.RefuseIPLiteral},
		{"100.128.0.1:443", runs.RefuseIPLiteral},
		{"[2a00:1450:4001::200e]:443", runs.RefuseIPLiteral},
		{"granted.test:443", runs.RefusePrivateAddress},
		{"lan.granted.test:443", runs.RefusePrivateAddress},
		{"cgnat.granted.test:443", runs.RefusePrivateAddress},
		{"v6.granted.test:443", runs.RefusePrivateAddress},
		{"2130706433:443", runs.RefuseBadRequest},
		{"[fe80::1%25eth0]:443", runs.RefuseBadRequest},
	} {
		before := len(r.dns.called())
		resp, c, _ := r.connect(tc.target)
		assertRefusal(t, resp, tc.kind, "")
		c.Close()
		if tc.kind != runs.RefusePrivateAddress && len(r.dns.called()) != before {
			t.Errorf("%s: looked up before refusing: %v", tc.target, r.dns.called()[before:])
		}
	}
	// The same rules for http:// requests.
	for _, tc := range []struct{ url, kind string }{
		{"http://elsewhere.example/", runs.RefuseHostDenied},
		{"http://" + addr + "/", runs.RefuseIPLiteral},
		{"http://granted.test/", runs.RefusePrivateAddress},
		{"https://granted.test/", runs.RefuseBadRequest},
		{"ftp://granted.test/", runs.RefuseBadRequest},
	} {
		c := r.dial()
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: granted.test\r\n\r\n", tc.url)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		assertRefusal(t, resp, tc.kind, "")
		c.Close()
	}
	if conns() != 0 {
		t.Fatalf("a refused target was dialed %d times", conns())
	}
	// Only the reserved test names were ever looked up: elsewhere.example (not
	// granted) and pkgs.example's subdomain (granted only as the bare name)
	// were refused before any lookup or dial (the rig also fails any
	// test whose gateway asks its resolver for a public name).
	for _, name := range r.dns.called() {
		if !reservedName(name) {
			t.Fatalf("a public name was looked up: %s (all: %v)", name, r.dns.called())
		}
	}
	sum, _ := r.g.Summary()
	if sum.Refusals[runs.RefuseHostDenied] != 5 || sum.Refusals[runs.RefusePrivateAddress] != 5 || sum.LastRefusal.Kind != runs.RefuseBadRequest {
		t.Fatalf("%+v", sum)
	}
}

// An address listed explicitly exempts it from the range rule, for a
// name resolving to it too.
func TestListedPrivateAddressIsAllowed(t *testing.T) {
	addr, conns := echoServer(t)
	ap := netip.MustParseAddrPort(addr)
	r := newRig(t, Config{Providers: creds.BuiltinProviders(),
		Allow: []string{fmt.Sprintf("db.test:%d", ap.Port()), fmt.Sprintf("127.0.0.0/8:%d", ap.Port())}})
	r.dns.names["db.test"] = []netip.Addr{ap.Addr()}
	resp, c, _ := r.connect(fmt.Sprintf("db.test:%d", ap.Port()))
	c.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%d", resp.StatusCode)
	}
	r.g.Close()
	if conns() != 1 {
		t.Fatal("not dialed")
	}
}
