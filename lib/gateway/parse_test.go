package gateway

import (
	"encoding/json"
	"net/netip"
	"net/textproto"
	"net/url"
	"strings"
	"testing"

	"github.com/roster-sh/roster/lib/creds"
	"github.com/roster-sh/roster/lib/runs"
)

func TestParseGrant(t *testing.T) {
	for _, tc := range []struct {
		in     string
		host   string
		suffix bool
		prefix string
		port   int
	}{
		{"forge.example", "forge.example", false, "", 0},
		{"Forge.Example.", "forge.example", false, "", 0},
		{"*.content.example", "content.example", true, "", 0},
		{"pkgs.example:443", "pkgs.example", false, "", 443},
		{"10.0.0.5:5432", "", false, "10.0.0.5/32", 5432},
		{"10.0.0.5", "", false, "10.0.0.5/32", 0},
		{"10.0.0.0/8", "", false, "10.0.0.0/8", 0},
		{"10.1.2.3/8:22", "", false, "10.0.0.0/8", 22},
		{"::1", "", false, "::1/128", 0},
		{"[::1]:443", "", false, "::1/128", 443},
		{"fd00::/8", "", false, "fd00::/8", 0},
		{"[fd00::/8]:80", "", false, "fd00::/8", 80},
	} {
		g, err := parseGrant(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		p := ""
		if g.isAddr() {
			p = g.prefix.String()
		}
		if g.host != tc.host || g.suffix != tc.suffix || p != tc.prefix || g.port != tc.port {
			t.Errorf("%q: %+v", tc.in, g)
		}
	}
	for _, bad := range []string{"", " forge.example", "http://x", "x:0", "x:65536", "x:", "x:+1", "*.", "*.example", "*.10.0.0.1",
		"a..b", "-a.example", "[::1]", "::1:443x", "fe80::1%eth0", "ex ample.example", "münchen.example", "x/y", "[::1]x"} {
		if _, err := parseGrant(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestGrantMatching(t *testing.T) {
	gs, err := parseGrants([]string{"forge.example", "*.content.example", "pkgs.example:8443", "10.0.0.5:5432", "192.168.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		target string
		def    int
		want   string
	}{
		{"forge.example:443", defaultConnectPort, ""},
		{"forge.example", defaultHTTPPort, ""},
		{"forge.example:80", defaultConnectPort, runs.RefuseHostDenied}, // CONNECT's default is 443
		{"api.forge.example:443", defaultConnectPort, runs.RefuseHostDenied},
		{"raw.content.example:443", defaultConnectPort, ""},
		{"a.b.content.example:443", defaultConnectPort, ""},
		{"content.example:443", defaultConnectPort, runs.RefuseHostDenied}, // subdomains only
		{"evilcontent.example:443", defaultConnectPort, runs.RefuseHostDenied},
		{"pkgs.example:8443", defaultConnectPort, ""},
		{"pkgs.example:443", defaultConnectPort, runs.RefuseHostDenied},
		{"10.0.0.5:5432", defaultConnectPort, ""},
		{"10.0.0.5:443", defaultConnectPort, runs.RefuseIPLiteral},
		{"192.168.4.4:443", defaultConnectPort, ""},
		{"[::ffff:192.168.4.4]:443", defaultConnectPort, ""},
		{"192.168.4.4:80", defaultConnectPort, runs.RefuseIPLiteral},
		{"192.0.2.8:443", defaultConnectPort, runs.RefuseIPLiteral},
	} {
		tg, err := parseAuthority(tc.target, tc.def)
		if err != nil {
			t.Errorf("%s: %v", tc.target, err)
			continue
		}
		if got := gs.check(tg, tc.def); got != tc.want {
			t.Errorf("%s (default %d): %q, want %q", tc.target, tc.def, got, tc.want)
		}
	}
}

// refusedAddr classifies addresses only: no gateway, resolver or dialer
// is made here, so the public addresses below (which must classify as
// public) are never looked up or dialed. A box asking for them through
// the gateway is refused before any lookup or dial: TestEgressRefusals.
func TestRefusedAddressRanges(t *testing.T) {
	for _, s := range []string{"127.0.0.1", "127.8.9.10", "10.1.1.1", "172.16.0.1", "192.168.1.1", "169.254.169.254",
		"100.64.0.1", "100.127.255.255", "0.0.0.0", "0.1.2.3", "224.0.0.1", "255.255.255.255", "::", "::1", "fe80::1",
		"fd12::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::", "::127.0.0.1"} {
		if !refusedAddr(netip.MustParseAddr(s)) {
			t.Errorf("%s not refused", s)
		}
	}
	for _, s := range []string{"8.8.8.8", "140.82.112.3", "100.128.0.1", "2606:4700::1111", "2a00:1450:4001::200e"} {
		if refusedAddr(netip.MustParseAddr(s)) {
			t.Errorf("%s refused", s)
		}
	}
}

func TestParseAuthorityRefusesNumericNames(t *testing.T) {
	for _, s := range []string{"2130706433:443", "0x7f.1:443", "127.1:443", "017700000001:443", "[::1", "[::1]x", "a:b:443", ":443", "host:", "h:99999"} {
		if tg, err := parseAuthority(s, 443); err == nil {
			t.Errorf("%q parsed as %+v", s, tg)
		}
	}
}

func TestUsageFromStreamsAndBodies(t *testing.T) {
	for _, tc := range []struct {
		name, style string
		sse         bool
		body        string
		want        callUsage
	}{
		{"anthropic stream", creds.StyleAnthropic, true, anthropicSSE1 + anthropicSSE2,
			callUsage{Model: "claude-test-20250101", ID: "msg_1", Input: 25, Output: 15, CacheRead: 7, CacheWrite: 3}},
		{"openai stream", creds.StyleOpenAI, true, openaiSSE1 + openaiSSE2,
			callUsage{Model: "gpt-test", ID: "chatcmpl-1", Input: 20, Output: 9, CacheRead: 10}},
		{"openai responses stream", creds.StyleOpenAI, true,
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"model\":\"gpt-5\",\"usage\":{\"input_tokens\":100,\"input_tokens_details\":{\"cached_tokens\":40},\"output_tokens\":7}}}\n\n",
			callUsage{Model: "gpt-5", ID: "resp_1", Input: 60, Output: 7, CacheRead: 40}},
		{"crlf stream", creds.StyleAnthropic, true, strings.ReplaceAll(anthropicSSE1+anthropicSSE2, "\n", "\r\n"),
			callUsage{Model: "claude-test-20250101", ID: "msg_1", Input: 25, Output: 15, CacheRead: 7, CacheWrite: 3}},
		{"anthropic json", creds.StyleAnthropic, false,
			`{"id":"msg_2","type":"message","content":[{"type":"text","text":"a \"quoted\" } ] , text"}],"model":"claude-x","usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":2}}`,
			callUsage{Model: "claude-x", ID: "msg_2", Input: 10, Output: 5, CacheRead: 2}},
		{"openai json", creds.StyleOpenAI, false,
			`{ "id" : "c1", "usage": {"prompt_tokens": 12, "completion_tokens": 4}, "model": "gpt-test", "choices": [] }`,
			callUsage{Model: "gpt-test", ID: "c1", Input: 12, Output: 4}},
		{"error json", creds.StyleAnthropic, false, `{"type":"error","error":{"type":"overloaded_error","message":"x"}}`, callUsage{}},
		{"usage nested elsewhere is not top-level", creds.StyleAnthropic, false, `{"content":[{"usage":{"input_tokens":99}}]}`, callUsage{}},
		{"not json", creds.StyleOpenAI, false, "<html>502</html>", callUsage{}},
	} {
		// Fed whole, and one byte at a time: the same answer.
		for _, step := range []int{len(tc.body), 1, 7} {
			r := newUsageReader(tc.style, tc.sse)
			for i := 0; i < len(tc.body); i += step {
				r.Write([]byte(tc.body[i:min(i+step, len(tc.body))]))
			}
			got := r.result()
			got.sawUsage, got.final = false, false
			if got != tc.want {
				t.Errorf("%s (step %d): %+v, want %+v", tc.name, step, got, tc.want)
			}
		}
	}
}

func TestUsageReaderMemoryIsBounded(t *testing.T) {
	r := newUsageReader(creds.StyleAnthropic, true)
	r.Write([]byte("data: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\""))
	big := []byte(strings.Repeat("x", 1<<20))
	for i := 0; i < 8; i++ {
		r.Write(big)
	}
	if cap(r.line) > maxSSELine*2 {
		t.Fatalf("line buffer grew to %d", cap(r.line))
	}
	r.Write([]byte("\"}}\n\n" + anthropicSSE1 + anthropicSSE2))
	if u := r.result(); u.Input != 25 || u.Output != 15 {
		t.Fatalf("after a long line: %+v", u)
	}
	j := newUsageReader(creds.StyleOpenAI, false)
	j.Write([]byte(`{"usage":{"pad":"`))
	for i := 0; i < 8; i++ {
		j.Write(big)
	}
	j.Write([]byte(`"},"model":"m"}`))
	if cap(j.js.val) > maxCaptureVal*2 {
		t.Fatalf("capture grew to %d", cap(j.js.val))
	}
	if u := j.result(); u.Model != "m" {
		t.Fatalf("%+v", u)
	}
}

func TestFramingFollowsKeptAliveRequests(t *testing.T) {
	for _, tc := range []struct {
		name            string
		raw             string
		ambiguous, lost bool
	}{
		{"two clean", "POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\n\r\n", false, false},
		{"chunked then clean", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: v\r\n\r\nGET / HTTP/1.1\r\n\r\n", false, false},
		{"both", "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", true, true},
		{"both after a body that hides a head", "POST / HTTP/1.1\r\nContent-Length: 60\r\n\r\n" +
			"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: x\r\n\r\n" + "GET / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", true, true},
		{"body that looks like a head", "POST / HTTP/1.1\r\nContent-Length: 64\r\n\r\nPOST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: x\r\n\r\n", false, false},
		{"connect", "CONNECT a:443 HTTP/1.1\r\n\r\n\x16\x03\x01Content-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", false, false},
		{"bad chunk", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false, true},
		{"upgrade", "GET / HTTP/1.1\r\nUpgrade: websocket\r\n\r\n", false, true},
		{"folded", "GET / HTTP/1.1\r\nX-A: b\r\n\tc\r\n\r\n", true, true},
	} {
		for _, step := range []int{len(tc.raw), 1, 5} {
			f := newFraming(1 << 16)
			for i := 0; i < len(tc.raw); i += step {
				f.feed([]byte(tc.raw[i:min(i+step, len(tc.raw))]))
			}
			if f.ambiguous.Load() != tc.ambiguous || f.lost.Load() != tc.lost {
				t.Errorf("%s (step %d): ambiguous %v lost %v", tc.name, step, f.ambiguous.Load(), f.lost.Load())
			}
		}
	}
}

// FuzzProxyTarget: a CONNECT authority, an absolute URI and an allow entry
// from the box and the operator; parsing never panics, a parsed target
// prints as itself, and a grant decision never calls for a lookup of an
// ungranted name.
func FuzzProxyTarget(f *testing.F) {
	for _, s := range [][2]string{
		{"forge.example:443", "forge.example"}, {"[::1]:443", "[::1]:443"}, {"10.0.0.5:5432", "10.0.0.0/8:5432"},
		{"raw.content.example:443", "*.content.example"}, {"http://pkgs.example/simple/", "pkgs.example:80"},
		{"2130706433:443", "127.0.0.1"}, {"[fe80::1%25eth0]:443", "fe80::/10"}, {"a..b:1", "*."}, {"http://[::ffff:7f00:1]:80/", "::ffff:127.0.0.1"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, authority, entry string) {
		host := authority
		if u, err := url.ParseRequestURI(authority); err == nil && u.Scheme != "" {
			host = u.Host
		}
		g, gerr := parseGrant(entry)
		tg, terr := parseAuthority(host, defaultConnectPort)
		if terr != nil {
			return
		}
		if tg.port < 1 || tg.port > 65535 {
			t.Fatalf("port %d", tg.port)
		}
		again, err := parseAuthority(tg.String(), 1)
		if err != nil || again != tg {
			t.Fatalf("%q -> %v -> %+v %v", host, tg, again, err)
		}
		if gerr != nil {
			return
		}
		kind := grants{g}.check(tg, defaultConnectPort)
		switch {
		case tg.addr.IsValid() && kind != "" && kind != runs.RefuseIPLiteral,
			!tg.addr.IsValid() && kind != "" && kind != runs.RefuseHostDenied:
			t.Fatalf("%v under %q: %q", tg, entry, kind)
		case kind == "" && !tg.addr.IsValid() && !(tg.host == g.host || g.suffix && strings.HasSuffix(tg.host, "."+g.host)):
			t.Fatalf("%v granted by %q", tg, entry)
		case kind == "" && tg.addr.IsValid() && !g.prefix.Contains(tg.addr):
			t.Fatalf("%v granted by %q", tg, entry)
		}
	})
}

// FuzzUsageStream: whatever the upstream sends, the usage reader never
// panics, holds bounded memory, and gives the same answer however the
// bytes are split.
func FuzzUsageStream(f *testing.F) {
	f.Add([]byte(anthropicSSE1+anthropicSSE2), true, uint16(17))
	f.Add([]byte(openaiSSE1+openaiSSE2), true, uint16(3))
	f.Add([]byte(`{"id":"m","model":"x","content":[{"text":"}\"]"}],"usage":{"input_tokens":1,"output_tokens":2}}`), false, uint16(5))
	f.Add([]byte(`{"usage":{"prompt_tokens":-5,"completion_tokens":9e99}}`), false, uint16(1))
	f.Add([]byte("data: {\"usage\":{\"input_tokens\":1}}\r\ndata: [DONE]"), true, uint16(2))
	f.Fuzz(func(t *testing.T, body []byte, sse bool, split uint16) {
		for _, style := range []string{creds.StyleAnthropic, creds.StyleOpenAI} {
			whole := newUsageReader(style, sse)
			whole.Write(body)
			cut := newUsageReader(style, sse)
			step := int(split%64) + 1
			for i := 0; i < len(body); i += step {
				cut.Write(body[i:min(i+step, len(body))])
				if len(cut.line) > maxSSELine || len(cut.js.val) > maxCaptureVal+1 {
					t.Fatalf("buffers grew: line %d capture %d", len(cut.line), len(cut.js.val))
				}
			}
			a, b := whole.result(), cut.result()
			if a != b {
				t.Fatalf("split changed the answer: %+v vs %+v", a, b)
			}
			if a.Input < 0 || a.Output < 0 || a.CacheRead < 0 || a.CacheWrite < 0 {
				t.Fatalf("negative usage %+v", a)
			}
		}
	})
}

// FuzzFraming: the smuggling guard follows any byte stream without
// panicking, with bounded memory, the same way however it is split.
func FuzzFraming(f *testing.F) {
	f.Add([]byte("POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\n\r\n"), uint16(1))
	f.Add([]byte("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n"), uint16(4))
	f.Add([]byte("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"), uint16(9))
	f.Fuzz(func(t *testing.T, raw []byte, split uint16) {
		a := newFraming(4096)
		a.feed(raw)
		b := newFraming(4096)
		step := int(split%32) + 1
		for i := 0; i < len(raw); i += step {
			b.feed(raw[i:min(i+step, len(raw))])
			if len(b.line) > 4096 {
				t.Fatalf("line buffer %d", len(b.line))
			}
		}
		if a.ambiguous.Load() != b.ambiguous.Load() || a.lost.Load() != b.lost.Load() || a.state != b.state {
			t.Fatalf("split changed the framing")
		}
	})
}

// usageObjects are usage objects as upstreams send them, and the shapes
// decodeUsage's scanner hands to encoding/json.
var usageObjects = []string{
	`{"input_tokens":5,"output_tokens":1}`,
	`{"input_tokens":25,"cache_creation_input_tokens":3,"cache_read_input_tokens":7,"cache_creation":{"ephemeral_5m_input_tokens":3,"ephemeral_1h_input_tokens":0},"output_tokens":15,"service_tier":"standard","server_tool_use":{"web_search_requests":0}}`,
	`{"prompt_tokens":30,"completion_tokens":9,"total_tokens":39,"prompt_tokens_details":{"cached_tokens":10,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`,
	`{"input_tokens":100,"input_tokens_details":{"cached_tokens":40},"output_tokens":7,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":107}`,
	` { "input_tokens" : -0 , "output_tokens":null } `,
	`{"prompt_tokens_details":{"cached_tokens":3},"prompt_tokens_details":{}}`,
	`{"prompt_tokens_details":{"cached_tokens":3},"prompt_tokens_details":null,"input_tokens_details":{"cached_tokens":1}}`,
	`{"input_tokens":5,"input_tokens":null}`,
	`{"Input_Tokens":5}`, `{"input_tokens":5.0}`, `{"input_tokens":1e3}`, `{"input_tokens":"5"}`,
	`{"input_tokens":99999999999999999999}`, `{"input_tokens":012}`, `{"x":[1,2]}`, `{"x":"a\"b"}`,
	`{"input_tokens":5,}`, `{"input_tokens":5}x`, `null`, `5`, `{}`, `{"a":{"b":{"c":1}}}`, `{"x":true,"y":false}`,
}

func TestDecodeUsageAgreesWithEncodingJSON(t *testing.T) {
	for _, v := range usageObjects {
		checkDecodeUsage(t, []byte(v))
	}
	var f usageFields
	if !decodeUsage([]byte(usageObjects[1]), &f) || f.in != (optInt{25, true}) || f.cacheWrite != (optInt{3, true}) || f.out != (optInt{15, true}) {
		t.Fatalf("anthropic usage: %+v", f)
	}
	openai := []byte(usageObjects[2])
	if n := testing.AllocsPerRun(100, func() { decodeUsage(openai, &f) }); n != 0 {
		t.Errorf("an OpenAI usage object costs %v allocations", n)
	}
}

// checkDecodeUsage: decodeUsage says what json.Unmarshal into usageJSON
// says, and where its own scanner answers, the answer is encoding/json's.
func checkDecodeUsage(t *testing.T, v []byte) {
	var j usageJSON
	jerr := json.Unmarshal(v, &j)
	var f usageFields
	if ok := decodeUsage(v, &f); ok != (jerr == nil) || ok && f != j.fields() {
		t.Fatalf("%q: decodeUsage %v %+v, encoding/json %v %+v", v, ok, f, jerr, j.fields())
	}
	var fast usageFields
	if s := (usageScan{b: v}); s.object(&fast) && (jerr != nil || fast != j.fields()) {
		t.Fatalf("%q: the scanner read %+v, encoding/json %v %+v", v, fast, jerr, j.fields())
	}
	var js string
	jerr = json.Unmarshal(v, &js)
	if s, ok := decodeString(v); ok != (jerr == nil) || s != js {
		t.Fatalf("%q: decodeString %q %v, encoding/json %q %v", v, s, ok, js, jerr)
	}
}

// FuzzUsageObject: decodeUsage's scanner agrees with encoding/json on
// every input.
func FuzzUsageObject(f *testing.F) {
	for _, v := range usageObjects {
		f.Add([]byte(v))
	}
	f.Add([]byte(`"claude-sonnet-4-5"`))
	f.Add([]byte(`"a\u00e9"`))
	f.Fuzz(func(t *testing.T, v []byte) { checkDecodeUsage(t, v) })
}

// credentialHeader answers as isCredentialHeader does, for the names it
// knows and for any other.
func TestCredentialHeaderShortcut(t *testing.T) {
	names := append(append([]string{"X-My-Token", "X-Session-Id", "x-api-key", "Content-Type2", "Kelvin-\u212a"}, commonHeaders...), credentialHeaders...)
	for _, n := range names {
		for _, v := range []string{n, textproto.CanonicalMIMEHeaderKey(n), strings.ToLower(n)} {
			if credentialHeader(v) != isCredentialHeader(v) {
				t.Errorf("%q: shortcut %v, full check %v", v, credentialHeader(v), isCredentialHeader(v))
			}
		}
	}
	for _, n := range credentialHeaders {
		if !credentialHeader(textproto.CanonicalMIMEHeaderKey(n)) {
			t.Errorf("%s passes", n)
		}
	}
	for _, n := range []string{"Content-Type", "Anthropic-Version", "X-Stainless-Lang"} {
		if credentialHeader(n) {
			t.Errorf("%s is stripped", n)
		}
	}
}
