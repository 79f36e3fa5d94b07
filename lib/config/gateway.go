package config

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/roster-sh/roster/lib/errs"
)

// Provider is one model provider the gateway serves, as org.toml's
// [gateway.NAME] table sets it over the built-in defaults (docs/gateway.md).
type Provider struct {
	Name        string
	API         string   // "anthropic" | "openai": the credential header, usage format and error shape
	Upstream    string   // base URL model calls go to
	Credentials []string // sources tried in order at every request: "vault", "pi", "env:NAME", "file:PATH"
	KeyEnv      string   // the box variable that gets a placeholder key
	BaseEnv     string   // the box variable that gets the route's URL
	// Paths are the "METHOD /path" pairs the route forwards: its API's
	// (RoutePaths) and org.toml's paths, added to them. A path ending in
	// "/*" covers what is under it.
	Paths []string
}

// RoutePaths are the requests a model route of api forwards by default:
// inference and the model list, never files, batches, admin or
// fine-tuning (docs/gateway.md, "Model routes forward only inference").
func RoutePaths(api string) []string {
	if api == "anthropic" {
		return []string{"POST /v1/messages", "POST /v1/messages/count_tokens", "GET /v1/models", "GET /v1/models/*"}
	}
	return []string{"POST /v1/chat/completions", "POST /v1/responses", "POST /v1/embeddings", "GET /v1/models", "GET /v1/models/*"}
}

// routePathRE is one "METHOD /path" pair of a provider's paths.
var routePathRE = lazyRegexp(`^[A-Z]{3,7} /[A-Za-z0-9._~/:-]*(/\*)?$`)

// Price is a model's price in USD per million tokens.
type Price struct{ Input, Output, CacheRead, CacheWrite float64 }

// BuiltinProviders are anthropic and openai with their defaults; org.toml
// may change any key of theirs and add providers of its own.
func BuiltinProviders() map[string]Provider {
	return map[string]Provider{
		"anthropic": {Name: "anthropic", API: "anthropic", Upstream: "https://api.anthropic.com",
			Credentials: []string{"vault", "pi", "env:ANTHROPIC_API_KEY"}, KeyEnv: "ANTHROPIC_API_KEY", BaseEnv: "ANTHROPIC_BASE_URL",
			Paths: RoutePaths("anthropic")},
		"openai": {Name: "openai", API: "openai", Upstream: "https://api.openai.com",
			Credentials: []string{"vault", "pi", "env:OPENAI_API_KEY"}, KeyEnv: "OPENAI_API_KEY", BaseEnv: "OPENAI_BASE_URL",
			Paths: RoutePaths("openai")},
	}
}

// keyVariables are the box variables that carry a model credential: a
// gateway box never gets them from pass_env (the gateway holds the key).
var keyVariables = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY"}

func isKeyVariable(e string) bool {
	for _, k := range keyVariables {
		if e == k {
			return true
		}
	}
	return false
}

type providerFile struct {
	API         *string  `toml:"api"`
	Upstream    *string  `toml:"upstream"`
	Credentials []string `toml:"credentials"`
	KeyEnv      *string  `toml:"key_env"`
	BaseEnv     *string  `toml:"base_env"`
	Paths       []string `toml:"paths"`
}

type priceFile struct {
	Input      float64 `toml:"input"`
	Output     float64 `toml:"output"`
	CacheRead  float64 `toml:"cache_read"`
	CacheWrite float64 `toml:"cache_write"`
}

// parseGateway reads org.toml's [gateway] tables: [gateway.prices] and one
// [gateway.NAME] per provider. bad names the key's line in errors.
func parseGateway(raw map[string]any, o *Org, bad func(key, msg string) error) error {
	o.Gateway.Providers = BuiltinProviders()
	o.Gateway.Prices = map[string]Price{}
	names := make([]string, 0, len(raw))
	for k := range raw {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		key := "gateway." + name
		data, err := toml.Marshal(raw[name])
		if err != nil {
			return bad(key, "must be a table")
		}
		if _, ok := raw[name].(map[string]any); !ok {
			return bad(key, "must be a table")
		}
		if name == "prices" {
			var prices map[string]priceFile
			if err := decodeStrict(data, &prices); err != nil {
				return bad(key, "each model is a table { input, output, cache_read, cache_write } of USD per million tokens: "+tomlMsg(err))
			}
			for m, p := range prices {
				if p.Input < 0 || p.Output < 0 || p.CacheRead < 0 || p.CacheWrite < 0 {
					return bad(key, fmt.Sprintf("%q: a price is 0 or more", m))
				}
				o.Gateway.Prices[m] = Price(p)
			}
			continue
		}
		if !providerNameRE().MatchString(name) {
			return bad(key, fmt.Sprintf("%q is not a provider name (a lower-case letter, then up to 30 of a-z 0-9 -)", name))
		}
		if name == "git" {
			return bad(key, "\"git\" is the gateway's git route (/git/NAME, docs/repos.md): name the provider otherwise")
		}
		var f providerFile
		if err := decodeStrict(data, &f); err != nil {
			return bad(key, tomlMsg(err))
		}
		p, builtin := o.Gateway.Providers[name]
		if !builtin {
			up := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
			p = Provider{Name: name, API: "openai", Credentials: []string{"vault", "env:" + up + "_API_KEY"},
				KeyEnv: up + "_API_KEY", BaseEnv: up + "_BASE_URL"}
		}
		if f.API != nil {
			p.API = *f.API
		}
		if p.API != "anthropic" && p.API != "openai" {
			return bad(key+".api", fmt.Sprintf("%q must be \"anthropic\" or \"openai\" (the shape of its requests)", p.API))
		}
		if f.Upstream != nil {
			p.Upstream = *f.Upstream
		}
		if p.Upstream == "" {
			return bad(key+".upstream", "missing: where this provider's model calls go (https://...)")
		}
		if u, err := url.Parse(p.Upstream); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" {
			return bad(key+".upstream", fmt.Sprintf("%q must be an http:// or https:// URL with a host and no query", p.Upstream))
		}
		if f.Credentials != nil {
			p.Credentials = append([]string{}, f.Credentials...)
		}
		for _, c := range p.Credentials {
			if err := validSource(c); err != nil {
				return bad(key+".credentials", err.Error())
			}
		}
		if f.KeyEnv != nil {
			p.KeyEnv = *f.KeyEnv
		}
		if f.BaseEnv != nil {
			p.BaseEnv = *f.BaseEnv
		}
		for k, v := range map[string]string{"key_env": p.KeyEnv, "base_env": p.BaseEnv} {
			if !envNameRE().MatchString(v) {
				return bad(key+"."+k, fmt.Sprintf("%q is not an environment variable name", v))
			}
		}
		p.Paths = append(RoutePaths(p.API), f.Paths...)
		for _, rp := range f.Paths {
			if !routePathRE().MatchString(rp) || strings.Contains(rp, "/../") || strings.HasSuffix(rp, "/..") {
				return bad(key+".paths", fmt.Sprintf("%q is not \"METHOD /path\" (e.g. \"POST /v1/messages\"; a trailing /* covers what is under it)", rp))
			}
		}
		o.Gateway.Providers[name] = p
	}
	return nil
}

var providerNameRE = lazyRegexp(`^[a-z][a-z0-9-]{0,30}$`)

// validSource checks a gateway credential source.
func validSource(c string) error {
	if c == "vault" || c == "pi" {
		return nil
	}
	if err := validCredential(c); err != nil {
		return fmt.Errorf("%q: a credential source is \"vault\", \"pi\", \"env:NAME\" or \"file:PATH\"", c)
	}
	return nil
}

func tomlMsg(err error) string {
	var sm *toml.StrictMissingError
	if errors.As(err, &sm) && len(sm.Errors) > 0 {
		return fmt.Sprintf("unknown key %q", strings.Join(sm.Errors[0].Key(), "."))
	}
	return strings.TrimPrefix(err.Error(), "toml: ")
}

// ValidGrant checks one entry of a worker's [gateway] allow: "host",
// "*.domain" (subdomains only), either with an optional ":port", an IP
// literal (with an optional port; IPv6 in brackets then) or a CIDR.
func ValidGrant(g string) error {
	if g == "" || strings.ContainsAny(g, " /\t") && !strings.Contains(g, "/") {
		return fmt.Errorf("%q: empty or holds a space", g)
	}
	if strings.Contains(g, "/") {
		if _, err := netip.ParsePrefix(g); err != nil {
			return fmt.Errorf("%q: not a CIDR (%v)", g, err)
		}
		return nil
	}
	if _, err := netip.ParseAddr(g); err == nil {
		return nil
	}
	if ap, err := netip.ParseAddrPort(g); err == nil {
		if ap.Port() == 0 {
			return fmt.Errorf("%q: port 0", g)
		}
		return nil
	}
	host, port := g, ""
	if i := strings.LastIndexByte(g, ':'); i >= 0 {
		host, port = g[:i], g[i+1:]
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: the port must be 1 to 65535", g)
		}
	}
	h := strings.TrimPrefix(host, "*.")
	if !hostNameRE().MatchString(h) || strings.Contains(h, "..") || strings.Contains(h, "*") {
		return fmt.Errorf("%q: not a host name, *.domain, IP address or CIDR", g)
	}
	return nil
}

var hostNameRE = lazyRegexp(`^[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}))*\.?$`)

// AgentProvider is the provider an agent uses for a model (docs/agents.md):
// claude always anthropic; pi from its model ("PROVIDER/model", a gpt- or
// o-series model is openai), default anthropic.
func AgentProvider(agent, model string) string {
	switch agent {
	case "":
		return ""
	case "pi":
		if p, _, ok := strings.Cut(model, "/"); ok && p != "" {
			return p
		}
		m := strings.ToLower(model)
		if strings.HasPrefix(m, "gpt-") || (len(m) > 1 && m[0] == 'o' && m[1] >= '0' && m[1] <= '9') {
			return "openai"
		}
	}
	return "anthropic"
}

// CheckWorkerWithOrg is what a worker spec must satisfy against the org's
// settings, checked where both are loaded (a box start): the providers it
// names exist, and a gateway box's pass_env carries no provider's key
// variable (exit 2: the gateway holds the key, never the box).
func CheckWorkerWithOrg(w *Worker, o *Org) error {
	for _, p := range w.Gateway.Providers {
		if _, ok := o.Gateway.Providers[p]; !ok {
			known := make([]string, 0, len(o.Gateway.Providers))
			for n := range o.Gateway.Providers {
				known = append(known, n)
			}
			sort.Strings(known)
			return usageSpecError(w.File, fmt.Sprintf("[gateway] providers: %q is not a provider (known: %s; define it as [gateway.%s] in org.toml)", p, strings.Join(known, ", "), p))
		}
	}
	if w.Network != "gateway" {
		return nil
	}
	keys := append([]string{}, keyVariables...)
	for _, p := range o.Gateway.Providers {
		keys = append(keys, p.KeyEnv)
	}
	for _, e := range w.PassEnv {
		for _, k := range keys {
			if e == k {
				return usageSpecError(w.File, fmt.Sprintf("pass_env: %s is a model key: a gateway box never holds one (the gateway injects it; put the key in the vault with `roster key put PROVIDER`)", e))
			}
		}
	}
	return nil
}

// usageSpecError is a spec that must not be used as written: exit 2, naming
// the file.
func usageSpecError(file, msg string) error {
	return errs.WithHint(errs.New(errs.ErrUsage, file+": "+msg), "fix the file (roster(7) describes the keys); nothing was changed")
}
