package gateway

import (
	"bytes"
	"net/textproto"
	"strings"
)

// credentialHeaders are removed from every model request, whatever the
// provider: the box holds only a placeholder, and nothing it sends may
// choose whose account pays (OpenAI's organization and project headers
// would pick one of the operator's).
var credentialHeaders = []string{
	"Authorization", "Proxy-Authorization", "X-Api-Key", "Api-Key", "Cookie",
	"Anthropic-Api-Key", "Openai-Api-Key", "X-Goog-Api-Key", "Cf-Aig-Authorization",
	"Openai-Organization", "Openai-Project", "Anthropic-Organization",
	"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip",
}

// credentialNames is credentialHeaders in lower case.
var credentialNames = func() map[string]bool {
	m := make(map[string]bool, len(credentialHeaders))
	for _, h := range credentialHeaders {
		m[strings.ToLower(h)] = true
	}
	return m
}()

// credentialWords catch the names no list can foresee.
var credentialWords = [][]byte{[]byte("auth"), []byte("api-key"), []byte("apikey"), []byte("token"), []byte("secret"),
	[]byte("cookie"), []byte("session"), []byte("password"), []byte("credential")}

// commonHeaders are names agent clients send on every model call.
var commonHeaders = []string{
	"Accept", "Accept-Encoding", "Accept-Language", "Anthropic-Beta", "Anthropic-Version",
	"Anthropic-Dangerous-Direct-Browser-Access", "Connection", "Content-Length", "Content-Type",
	"Openai-Beta", "Te", "Traceparent", "User-Agent", "X-App", "X-Stainless-Arch", "X-Stainless-Async",
	"X-Stainless-Helper-Method", "X-Stainless-Lang", "X-Stainless-Os", "X-Stainless-Package-Version",
	"X-Stainless-Retry-Count", "X-Stainless-Runtime", "X-Stainless-Runtime-Version", "X-Stainless-Timeout",
}

// knownHeaders is isCredentialHeader's verdict on commonHeaders and
// credentialHeaders as net/http spells them (canonical), worked out once
// by isCredentialHeader itself: a request's usual names cost one lookup
// each, and any other name the full check.
var knownHeaders = func() map[string]bool {
	m := map[string]bool{}
	for _, list := range [][]string{commonHeaders, credentialHeaders} {
		for _, h := range list {
			h = textproto.CanonicalMIMEHeaderKey(h)
			m[h] = isCredentialHeader(h)
		}
	}
	return m
}()

// credentialHeader is isCredentialHeader, answered from knownHeaders when
// it can be.
func credentialHeader(name string) bool {
	if v, ok := knownHeaders[name]; ok {
		return v
	}
	return isCredentialHeader(name)
}

// isCredentialHeader tells a header that is never passed up, whatever its
// spelling: one of credentialHeaders, or a name holding a credential word.
// It lower-cases into a stack buffer: no allocation per header.
func isCredentialHeader(name string) bool {
	var buf [64]byte
	n := buf[:0]
	for i := 0; i < len(name) && n != nil; i++ {
		switch c := name[i]; {
		case c >= 0x80 || i == len(buf): // (net/http refuses such names; Unicode lowers K to k)
			n = nil
		case 'A' <= c && c <= 'Z':
			n = append(n, c+'a'-'A')
		default:
			n = append(n, c)
		}
	}
	if n == nil {
		n = []byte(strings.ToLower(name))
	}
	if credentialNames[string(n)] {
		return true
	}
	for _, w := range credentialWords {
		if bytes.Contains(n, w) {
			return true
		}
	}
	return false
}
