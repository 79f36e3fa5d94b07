// Package gateway is one run's mediator between its box and the world:
// model routes with credentials injected, granted egress, refusals and the
// ledger (docs/gateway.md).
//
// A run's supervisor serves one Gateway on a Unix socket only that run's
// box is given; the box's pid 1 relays 127.0.0.1:3128 to it. Every policy
// decision is made here, per request:
//
//   - /PROVIDER/... is a reverse proxy to the provider's upstream. Every
//     credential header the client sent is removed (a fixed list plus any
//     name containing auth, key, token, secret, cookie, session, password or
//     credential; OpenAI's organization and project headers too, so the
//     box cannot pick whose account pays) and the real credential, looked
//     up fresh for each request (creds.Lookup; never cached, never logged, never
//     written), is set: x-api-key, or Authorization: Bearer for an OpenAI
//     key or an Anthropic OAuth token, which also gets the oauth-2025-04-20
//     anthropic-beta feature the API requires with it (and an API key loses
//     it). Requests run full duplex; responses are flushed as they come;
//     usage (tokens, model, request id) is read from the bytes as they pass,
//     by a bounded SSE line reader or a streaming scan of a JSON body's
//     top-level keys, never by buffering. input_tokens means uncached input
//     for both styles (OpenAI's cached tokens are taken out of its
//     prompt_tokens). A model priced under a name it extends with "-"
//     (claude-sonnet-4-5-20250929 under claude-sonnet-4-5) takes that price.
//   - CONNECT host:port is an opaque tunnel and an absolute http:// URI is
//     forwarded, both only to a target the worker's allow list grants. The
//     grant is checked before any lookup; the gateway resolves the name
//     itself and dials the address it resolved; IP literals (and numeric
//     names such as 2130706433) are refused unless an entry lists them, and
//     addresses in loopback, private (IPv6 ULA too), link-local, multicast,
//     unspecified, CGNAT 100.64.0.0/10 (Tailscale, carrier-internal hosts),
//     reserved and IPv4-embedding IPv6 ranges are refused unless an address
//     or CIDR entry holds them. Provider upstreams are the operator's
//     configuration and exempt.
//   - Everything else, and every refusal, is an HTTP 403 with
//     X-Roster-Refusal: KIND and a body in the route's error shape; never a
//     dropped connection. Only what net/http itself cannot parse (a head
//     past MaxHeaderBytes: 431; a malformed request line: 400) is answered
//     by net/http, before the gateway sees a request, and is not ledgered.
//
// The providers and their credentials (org.toml's providers, the vault,
// the host's pi login, env: and file: sources, the order they are tried
// in) are lib/creds', which the dispatcher's credential hold also asks.
//
// Each request or tunnel ends as one fsynced line of runs/RUN/gateway.jsonl
// (a tunnel also gets one when it opens), with no header value, body or
// credential in it; lines are group-committed by one writer, and past
// LedgerMax they are counted and one final "capped" line says how many.
//
// A hostile box is expected: connections are bounded in number (excess
// ones wait in the socket's backlog, and past it the kernel refuses them),
// header bytes and header time are bounded, a request head with both
// Content-Length and Transfer-Encoding or with a folded header line is
// refused and its connection closed (net/http would accept either; a guard
// follows each connection's framing to see them), idle tunnels are closed,
// and Close ends everything within Limits.CloseWait.
package gateway
