package gateway

import (
	"net/http/httptest"
	"testing"

	"github.com/roster-sh/roster/lib/creds"
	"github.com/roster-sh/roster/lib/fakemodel"
)

// The project's scripted model server through the gateway: its recorded
// key is the real one, and the usage the gateway measured from the bytes
// is what it answered, for both styles, streamed and not.
func TestUsageAgainstTheScriptedModelServer(t *testing.T) {
	script := fakemodel.Script{Turns: []fakemodel.Turn{{Text: "done", InputTokens: 321, OutputTokens: 45, CacheRead: 6, CacheWrite: 7}}}
	for _, tc := range []struct {
		provider, path, key, body string
	}{
		{"anthropic", "/anthropic/v1/messages", realKey, `{"model":"claude-test","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"anthropic", "/anthropic/v1/messages", realKey, `{"model":"claude-test","messages":[{"role":"user","content":"hi"}]}`},
		{"openai", "/openai/v1/chat/completions", realOAI, `{"model":"gpt-test","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`},
		{"openai", "/openai/v1/chat/completions", realOAI, `{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}`},
	} {
		fm := fakemodel.New(tc.key, script)
		srv := httptest.NewServer(fm)
		c := vaultCreds(t, map[string]string{tc.provider: tc.key})
		ps := creds.BuiltinProviders()
		p := ps[tc.provider]
		p.Upstream = srv.URL
		ps[tc.provider] = p
		r := newRig(t, Config{Providers: ps, Granted: []string{tc.provider}, Creds: c})
		resp := r.post(tc.path, tc.body)
		if body := readAll(t, resp); resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tc.body, resp.StatusCode, body)
		}
		calls := fm.Calls()
		if len(calls) != 1 || calls[0].Key != tc.key {
			t.Fatalf("%s: upstream calls %+v", tc.body, len(calls))
		}
		want := calls[0]
		e := r.lines()[0]
		// Both mean uncached input (the server adds the cached tokens into
		// OpenAI's prompt_tokens, as OpenAI does; the gateway takes them out).
		if e.InputTokens != want.InputTokens || e.OutputTokens != want.OutputTokens || e.CacheReadTokens != want.CacheRead ||
			(tc.provider == "anthropic" && e.CacheWriteTokens != want.CacheWrite) {
			t.Errorf("%s: ledger %+v, server answered %+v", tc.body, e, want)
		}
		srv.Close()
	}
}
