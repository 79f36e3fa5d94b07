package gateway

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/runs"
)

// Default ports of an allow entry that names none.
const (
	defaultConnectPort = 443
	defaultHTTPPort    = 80
)

// grant is one parsed [gateway] allow entry: a host name, a *.domain
// wildcard (subdomains only), an address or a CIDR; port 0 = the kind's
// default (CONNECT 443, http 80).
type grant struct {
	entry  string
	host   string // exact name, or the domain of a wildcard
	suffix bool   // "*.domain": subdomains of host only
	prefix netip.Prefix
	port   int
}

func (g grant) isAddr() bool { return g.prefix.IsValid() }

func (g grant) portMatches(port, def int) bool {
	if g.port == 0 {
		return port == def
	}
	return port == g.port
}

// parseGrant parses an allow entry: "host", "*.domain", "1.2.3.4",
// "10.0.0.0/8", "::1", "fd00::/8", each optionally with ":port" (an IPv6
// address or CIDR then in brackets: "[::1]:443").
func parseGrant(s string) (grant, error) {
	bad := func(why string) (grant, error) {
		return grant{}, fmt.Errorf("gateway allow entry %q: %s: %w", s, why, errs.ErrUsage)
	}
	g := grant{entry: s}
	if s == "" || strings.TrimSpace(s) != s {
		return bad("empty or padded")
	}
	if p, ok := parseAddrOrPrefix(s); ok {
		g.prefix = p
		return g, nil
	}
	hostPart, portPart := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return bad("unclosed [")
		}
		hostPart, portPart = s[1:end], s[end+1:]
		if portPart != "" && !strings.HasPrefix(portPart, ":") {
			return bad("text after ]")
		}
		portPart = strings.TrimPrefix(portPart, ":")
		p, ok := parseAddrOrPrefix(hostPart)
		if !ok {
			return bad("not an address in [ ]")
		}
		g.prefix = p
		if portPart == "" {
			return bad("[ ] without a port")
		}
	} else if i := strings.LastIndexByte(s, ':'); i >= 0 {
		hostPart, portPart = s[:i], s[i+1:]
		if p, ok := parseAddrOrPrefix(hostPart); ok {
			if p.Addr().Is6() {
				return bad("an IPv6 address with a port goes in brackets: [ADDR]:PORT")
			}
			g.prefix = p
		}
	}
	if portPart != "" || strings.HasSuffix(s, ":") {
		n, err := strconv.Atoi(portPart)
		if err != nil || n < 1 || n > 65535 || portPart[0] == '+' || portPart[0] == '0' {
			return bad("port must be 1-65535")
		}
		g.port = n
	}
	if g.isAddr() {
		return g, nil
	}
	name := hostPart
	if strings.HasPrefix(name, "*.") {
		g.suffix = true
		name = name[2:]
	}
	name, ok := normalizeHost(name)
	if !ok || (g.suffix && !strings.Contains(name, ".") && name != "localhost") {
		return bad("want a host name, *.domain, an address or a CIDR")
	}
	if _, isAddr := parseAddrOrPrefix(name); isAddr {
		return bad("*. of an address")
	}
	g.host = name
	return g, nil
}

// parseAddrOrPrefix accepts an address (as a single-address prefix) or a
// CIDR; no zones.
func parseAddrOrPrefix(s string) (netip.Prefix, bool) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil || p.Addr().Zone() != "" {
			return netip.Prefix{}, false
		}
		return p.Masked(), true
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a, a.BitLen()), true
}

// normalizeHost lower-cases a DNS name, drops one trailing dot and checks
// its characters (ASCII letters, digits, '-', '.', '_'; labels 1-63).
func normalizeHost(h string) (string, bool) {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if h == "" || len(h) > 253 {
		return "", false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "", false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", false
			}
		}
	}
	return h, true
}

// target is what a proxy request asks to reach.
type target struct {
	host string     // normalized name, or the address's text
	addr netip.Addr // valid when the target is an IP literal
	port int
}

func (t target) String() string {
	if t.addr.IsValid() {
		return netip.AddrPortFrom(t.addr, uint16(t.port)).String()
	}
	return t.host + ":" + strconv.Itoa(t.port)
}

// parseAuthority parses host[:port] of a CONNECT request line or an http://
// URI's host (IPv6 in brackets); def is the port when none is given.
func parseAuthority(s string, def int) (target, error) {
	bad := func(why string) (target, error) { return target{}, fmt.Errorf("target %q: %s", clip(s, 80), why) }
	if s == "" {
		return bad("empty")
	}
	host, portStr := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return bad("unclosed [")
		}
		host, portStr = s[1:end], s[end+1:]
		if portStr != "" {
			if portStr[0] != ':' {
				return bad("text after ]")
			}
			portStr = portStr[1:]
			if portStr == "" {
				return bad("empty port")
			}
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return bad("not an IPv6 address in [ ]")
		}
	} else if i := strings.LastIndexByte(s, ':'); i >= 0 {
		host, portStr = s[:i], s[i+1:]
		if strings.Contains(host, ":") {
			return bad("an IPv6 address goes in brackets")
		}
		if portStr == "" {
			return bad("empty port")
		}
	}
	t := target{port: def}
	if portStr != "" {
		n, err := strconv.Atoi(portStr)
		if err != nil || n < 1 || n > 65535 || portStr[0] == '+' || portStr[0] == '-' {
			return bad("port must be 1-65535")
		}
		t.port = n
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return bad("zoned address")
		}
		t.addr = a.Unmap()
		t.host = t.addr.String()
		return t, nil
	}
	name, ok := normalizeHost(host)
	if !ok {
		return bad("not a host name")
	}
	if looksNumeric(name) {
		// 127.1, 0x7f.0.0.1, 2130706433: what some resolvers read as an
		// address is refused as one.
		return bad("a numeric host that is not a dotted-quad address")
	}
	t.host = name
	return t, nil
}

// looksNumeric: a name whose last label is all digits or hex-prefixed
// (no top-level domain is numeric).
func looksNumeric(name string) bool {
	last := name[strings.LastIndexByte(name, '.')+1:]
	if strings.HasPrefix(last, "0x") {
		return true
	}
	for i := 0; i < len(last); i++ {
		if last[i] < '0' || last[i] > '9' {
			return false
		}
	}
	return true
}

// grants is a worker's parsed allow list.
type grants []grant

func parseGrants(allow []string) (grants, error) {
	gs := make(grants, 0, len(allow))
	for _, s := range allow {
		g, err := parseGrant(s)
		if err != nil {
			return nil, err
		}
		gs = append(gs, g)
	}
	return gs, nil
}

// nameGranted: does an entry grant the name at port (before any lookup)?
func (gs grants) nameGranted(name string, port, def int) bool {
	for _, g := range gs {
		if g.isAddr() || !g.portMatches(port, def) {
			continue
		}
		if g.suffix {
			if strings.HasSuffix(name, "."+g.host) {
				return true
			}
		} else if name == g.host {
			return true
		}
	}
	return false
}

// addrListed: does an address or CIDR entry list a at port?
func (gs grants) addrListed(a netip.Addr, port, def int) bool {
	a = a.Unmap()
	for _, g := range gs {
		if g.isAddr() && g.portMatches(port, def) && g.prefix.Contains(a) {
			return true
		}
	}
	return false
}

// check decides a target before any lookup: "" when a name is granted (it
// must still be resolved and its addresses checked) or an address listed,
// else the refusal kind.
func (gs grants) check(t target, def int) string {
	if t.addr.IsValid() {
		if gs.addrListed(t.addr, t.port, def) {
			return ""
		}
		return runs.RefuseIPLiteral
	}
	if gs.nameGranted(t.host, t.port, def) {
		return ""
	}
	return runs.RefuseHostDenied
}

// refusedRanges are the address ranges a granted name may not resolve
// into unless an entry lists the address: beyond what netip classifies as
// loopback, private, link-local, multicast and unspecified, the ranges
// that reach a host's own networks in practice. CGNAT (100.64.0.0/10) is
// refused: it is where Tailscale and carrier-internal hosts live.
var refusedRanges = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",       // "this network"
		"100.64.0.0/10",   // CGNAT, Tailscale
		"192.0.0.0/24",    // IETF protocol assignments
		"198.18.0.0/15",   // benchmarking, used inside networks
		"240.0.0.0/4",     // reserved, broadcast
		"::/96",           // IPv4-compatible (deprecated)
		"64:ff9b::/96",    // NAT64 of any IPv4 address
		"64:ff9b:1::/48",  // local-use NAT64
		"2002::/16",       // 6to4, embeds an IPv4 address
		"fec0::/10",       // site-local (deprecated)
		"2001::/32",       // Teredo, embeds an IPv4 address
		"100::/64",        // discard
		"2001:db8::/32",   // documentation
		"192.88.99.0/24",  // 6to4 relay anycast
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"192.0.2.0/24",    // documentation
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// refusedAddr tells an address in a refused range.
func refusedAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() ||
		a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return true
	}
	for _, p := range refusedRanges {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
