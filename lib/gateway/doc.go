// Package gateway is one run's mediator between its box and the world:
// model routes with credentials injected, granted egress, refusals and the
// ledger (docs/gateway.md).
//
// A run's supervisor serves one Gateway on a Unix socket only that run's
// box is given; the box's pid 1 relays 127.0.0.1:3128 to it. Every policy
// decision is made here, per request:
//
//   - /PROVIDER/... is a reverse proxy to the provider's upstream. Every
//     credential header the client sent is removed and the real credential,
//     looked up fresh for each request (Lookup; never cached, never logged,
//     never written), is set. Bodies stream both ways; responses are flushed
//     as they come, and usage (tokens, model, request id) is read from the
//     bytes as they pass through a bounded line scanner, never by buffering.
//   - CONNECT host:port is an opaque tunnel and an absolute http:// URI is
//     forwarded, both only to a target the worker's allow list grants. The
//     grant is checked before any lookup; the gateway resolves the name
//     itself and dials the address it resolved; IP literals and addresses in
//     loopback, private (incl. CGNAT 100.64.0.0/10 and IPv6 ULA), link-local,
//     multicast and unspecified ranges are refused unless an allow entry
//     lists that address or a CIDR holding it. Provider upstreams are the
//     operator's configuration and exempt.
//   - Everything else, and every refusal, is an HTTP 403 with
//     X-Roster-Refusal: KIND and a body in the route's error shape; never a
//     dropped connection.
//
// Each request or tunnel ends as one fsynced line of runs/RUN/gateway.jsonl
// (a tunnel also gets one when it opens), with no header value, body or
// credential in it; past LedgerMax lines are counted, not written.
//
// A hostile box is expected: connections are bounded in number (excess
// ones wait for a slot), header bytes and header time are bounded, requests
// with both Content-Length and Transfer-Encoding are refused, idle tunnels
// are closed, and Close ends everything within a bounded time.
package gateway
