package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/roster-sh/roster/lib/errs"
)

func TestOrgGatewayTables(t *testing.T) {
	o, err := ParseOrg("org.toml", []byte(`
[gateway.anthropic]
upstream = "http://127.0.0.1:9999"
paths = ["POST /v1/complete", "GET /v1/files/*"]
[gateway.local]
api = "anthropic"
upstream = "http://127.0.0.1:4000/v"
credentials = ["file:/etc/k"]
[gateway.prices]
"claude-sonnet-4-5" = { input = 3.0, output = 15.0, cache_read = 0.3, cache_write = 3.75 }
[budget]
proactive_tokens = 400
proactive_usd = 1.5
`))
	if err != nil {
		t.Fatal(err)
	}
	a := o.Gateway.Providers["anthropic"]
	if a.Upstream != "http://127.0.0.1:9999" || a.API != "anthropic" || len(a.Credentials) != 3 || a.KeyEnv != "ANTHROPIC_API_KEY" {
		t.Errorf("anthropic = %+v", a)
	}
	if got := strings.Join(a.Paths, ","); got != "POST /v1/messages,POST /v1/messages/count_tokens,GET /v1/models,GET /v1/models/*,POST /v1/complete,GET /v1/files/*" {
		t.Errorf("anthropic paths = %s", got)
	}
	if got := strings.Join(o.Gateway.Providers["openai"].Paths, ","); !strings.HasPrefix(got, "POST /v1/chat/completions,POST /v1/responses,POST /v1/embeddings,") {
		t.Errorf("openai paths = %s", got)
	}
	l := o.Gateway.Providers["local"]
	if l.API != "anthropic" || l.Upstream != "http://127.0.0.1:4000/v" || l.KeyEnv != "LOCAL_API_KEY" || l.BaseEnv != "LOCAL_BASE_URL" || l.Credentials[0] != "file:/etc/k" {
		t.Errorf("local = %+v", l)
	}
	if o.Gateway.Providers["openai"].Upstream != "https://api.openai.com" {
		t.Errorf("openai lost its default: %+v", o.Gateway.Providers["openai"])
	}
	if p := o.Gateway.Prices["claude-sonnet-4-5"]; p.Input != 3 || p.Output != 15 || p.CacheRead != 0.3 || p.CacheWrite != 3.75 {
		t.Errorf("price = %+v", p)
	}
	if o.Budget.Tokens != 400 || o.Budget.USD != 1.5 {
		t.Errorf("budget = %+v", o.Budget)
	}
}

func TestOrgGatewayBadTablesRefused(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"[gateway.anthropic]\nupstream = \"ftp://x\"\n", `:2: gateway.anthropic.upstream: "ftp://x" must be an http:// or https:// URL`},
		{"[gateway.anthropic]\ncredentials = [\"keychain\"]\n", `gateway.anthropic.credentials: "keychain": a credential source is`},
		{"[gateway.Bad]\nupstream = \"http://x\"\n", `gateway.Bad: "Bad" is not a provider name`},
		{"[gateway.local]\napi = \"openai\"\n", `gateway.local.upstream: missing`},
		{"[gateway.git]\nupstream = \"http://x\"\n", `"git" is the gateway's git route`},
		{"[gateway.local]\napi = \"grpc\"\nupstream = \"http://x\"\n", `gateway.local.api: "grpc" must be`},
		{"[gateway.local]\nupstream = \"http://x\"\ntypo = 1\n", `unknown key "typo"`},
		{"[gateway.prices]\nm = { input = -1.0 }\n", `a price is 0 or more`},
		{"[gateway.openai]\npaths = [\"/v1/files\"]\n", `gateway.openai.paths: "/v1/files" is not "METHOD /path"`},
		{"[gateway.openai]\npaths = [\"post /v1/files\"]\n", `is not "METHOD /path"`},
		{"[gateway.openai]\npaths = [\"POST /v1/../admin\"]\n", `is not "METHOD /path"`},
		{"[gateway.openai]\npaths = [\"POST /v1/*/x\"]\n", `is not "METHOD /path"`},
		{"[gateway]\nanthropic = 3\n", `gateway.anthropic: must be a table`},
		{"[budget]\nproactive_tokens = -1\n", `budget.proactive_tokens: must be 0`},
	} {
		_, err := ParseOrg("org.toml", []byte(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, errs.ErrRefused) {
			t.Errorf("%q: error %v, want one with %q (exit 14)", c.text, err, c.want)
		}
	}
}

func TestWorkerAgentKeys(t *testing.T) {
	w, err := ParseWorker("w", "w.toml", []byte("uid = 7\nagent = \"pi\"\nmodel = \"gpt-4o\"\nagent_args = [\"--thinking\", \"off\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w.Agent != "pi" || w.Model != "gpt-4o" || len(w.AgentArgs) != 2 || len(w.Gateway.Providers) != 1 || w.Gateway.Providers[0] != "openai" || len(w.Warnings) != 0 {
		t.Errorf("worker = %+v", w)
	}
	w, _ = ParseWorker("w", "w.toml", []byte("uid = 7\nagent = \"claude\"\n"))
	if w.Network != "gateway" || w.Gateway.Providers[0] != "anthropic" {
		t.Errorf("claude worker = %+v", w)
	}
	w, _ = ParseWorker("w", "w.toml", []byte("uid = 7\nagent = \"pi\"\n[gateway]\nproviders = []\n"))
	if len(w.Gateway.Providers) != 0 {
		t.Errorf("providers = [] kept the default: %+v", w.Gateway)
	}
	_, err = ParseWorker("w", "w.toml", []byte("uid = 7\nagent = \"pi\"\ncommand = [\"/bin/sh\"]\n"))
	if !errors.Is(err, errs.ErrUsage) || !strings.Contains(err.Error(), "agent and command exclude each other") {
		t.Errorf("agent + command: %v, want exit 2", err)
	}
	for _, c := range []struct{ text, want string }{
		{"uid = 7\nagent = \"codex\"\n", `agent: "codex" must be`},
		{"uid = 7\nmodel = \"m\"\ncommand = [\"/bin/sh\"]\n", `model and agent_args are for an agent worker`},
		{"uid = 7\n[gateway]\nallow = [\"exa mple.com\"]\n", `gateway.allow`},
		{"uid = 7\n[gateway]\nallow = [\"example.com:99999\"]\n", `the port must be 1 to 65535`},
		{"uid = 7\n[gateway]\nallow = [\"10.0.0.0/33\"]\n", `not a CIDR`},
		{"uid = 7\n[gateway]\nallow = [\"a.*.com\"]\n", `not a host name`},
	} {
		_, err := ParseWorker("w", "w.toml", []byte(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.text, err, c.want)
		}
	}
}

func TestGrantForms(t *testing.T) {
	for _, g := range []string{"github.com", "*.githubusercontent.com", "pypi.org:443", "10.0.0.5:5432", "10.0.0.5", "127.0.0.1:8080", "::1", "[::1]:80", "10.0.0.0/8", "fd00::/8"} {
		if err := ValidGrant(g); err != nil {
			t.Errorf("ValidGrant(%q) = %v", g, err)
		}
	}
	for _, g := range []string{"", "*", "*.", "a b", "http://x", "x:0", "x:", "1.2.3.4:0", "a..b"} {
		if err := ValidGrant(g); err == nil {
			t.Errorf("ValidGrant(%q) accepted", g)
		}
	}
}

func TestPassEnvOfAModelKeyRefusedInAGatewayBox(t *testing.T) {
	o, _ := ParseOrg("org.toml", []byte("[gateway.local]\nupstream = \"http://127.0.0.1:1\"\n"))
	for _, v := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "LOCAL_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"} {
		spec := "uid = 7\ncommand = [\"/bin/sh\"]\npass_env = [\"" + v + "\"]\n"
		w, err := ParseWorker("w", "w.toml", []byte(spec))
		if v != "LOCAL_API_KEY" { // a built-in key variable: refused at load already
			if !errors.Is(err, errs.ErrUsage) || !strings.Contains(err.Error(), v+" is a model key") {
				t.Errorf("pass_env %s at load: %v, want exit 2", v, err)
			}
			w, err = ParseWorker("w", "w.toml", []byte(spec+"network = \"host\"\n"))
			if err != nil {
				t.Fatal(err)
			}
			w.Network = "gateway" // as if: the org-wide check refuses it too
		} else if err != nil {
			t.Fatal(err)
		}
		if err := CheckWorkerWithOrg(w, o); !errors.Is(err, errs.ErrUsage) || !strings.Contains(err.Error(), v+" is a model key") {
			t.Errorf("pass_env %s: %v, want exit 2", v, err)
		}
		w.Network = "host" // the operator's explicit, warned choice
		if err := CheckWorkerWithOrg(w, o); err != nil {
			t.Errorf("host box with pass_env %s: %v", v, err)
		}
	}
	w, _ := ParseWorker("w", "w.toml", []byte("uid = 7\ncommand = [\"/bin/sh\"]\n[gateway]\nproviders = [\"nope\"]\n"))
	if err := CheckWorkerWithOrg(w, o); !errors.Is(err, errs.ErrUsage) || !strings.Contains(err.Error(), `"nope" is not a provider`) {
		t.Errorf("unknown provider: %v", err)
	}
}

func TestAgentProvider(t *testing.T) {
	for _, c := range []struct{ agent, model, want string }{
		{"", "", ""}, {"pi", "", "anthropic"}, {"pi", "claude-sonnet-4-5", "anthropic"}, {"pi", "gpt-4o", "openai"},
		{"pi", "o3-mini", "openai"}, {"pi", "local/llama", "local"}, {"claude", "gpt-4o", "anthropic"},
	} {
		if got := AgentProvider(c.agent, c.model); got != c.want {
			t.Errorf("AgentProvider(%q, %q) = %q, want %q", c.agent, c.model, got, c.want)
		}
	}
}

func TestRenderAgentWorkerParsesBack(t *testing.T) {
	data, err := RenderWorker(NewWorker{Name: "p", UID: 200001, Agent: "pi", Model: "claude-sonnet-4-5"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := ParseWorker("p", "p.toml", data)
	if err != nil || w.Agent != "pi" || w.Model != "claude-sonnet-4-5" || len(w.Warnings) != 0 {
		t.Fatalf("%+v %v\n%s", w, err, data)
	}
}

func TestHostBoxPassingAModelKeyIsWarned(t *testing.T) {
	w, err := ParseWorker("w", "w.toml", []byte("uid = 7\ncommand = [\"/bin/sh\"]\nnetwork = \"host\"\npass_env = [\"ANTHROPIC_API_KEY\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Warnings) != 2 || !strings.Contains(w.Warnings[1], "pass_env hands the model key ANTHROPIC_API_KEY into a host-network box") {
		t.Errorf("warnings %q", w.Warnings)
	}
}
