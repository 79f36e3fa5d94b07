package gateway

import (
	"slices"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/creds"
)

// CheckAllow validates a worker's [gateway] allow entries (for loading a
// worker spec); the error names the first bad entry and wraps
// errs.ErrUsage.
func CheckAllow(allow []string) error {
	_, err := parseGrants(allow)
	return err
}

// BoxEnv is what a gateway box's environment gains for its providers
// (docs/gateway.md): for each granted provider, its base URL variable
// pointing at its route on gw (http://127.0.0.1:3128) and its key variable
// holding a placeholder shaped like the credential the gateway would inject
// now (OAuth-shaped for an Anthropic OAuth token, so that pi sends the
// OAuth request shape). "NAME=value" entries, sorted by provider name.
func BoxEnv(providers map[string]creds.Provider, granted []string, c creds.Creds, gw string, now time.Time) []string {
	names := slices.Clone(granted)
	slices.Sort(names)
	names = slices.Compact(names)
	var env []string
	for _, name := range names {
		p, ok := providers[name]
		if !ok {
			continue
		}
		if p.BaseEnv != "" {
			env = append(env, p.BaseEnv+"="+BoxBaseURL(p, gw))
		}
		if p.KeyEnv != "" {
			cr, err := creds.Lookup(p, c, now)
			env = append(env, p.KeyEnv+"="+Placeholder(p, err == nil && cr.OAuth))
		}
	}
	return env
}

// BoxBaseURL is the value of p.BaseEnv in a box whose gateway is at gw
// (http://127.0.0.1:3128): the provider's route, plus /v1 for the OpenAI
// style, whose clients expect the version in the base URL (the route maps
// /openai/v1/... onto UPSTREAM/v1/...).
func BoxBaseURL(p creds.Provider, gw string) string {
	u := strings.TrimRight(gw, "/") + "/" + p.Name
	if p.Style == creds.StyleOpenAI {
		u += "/v1"
	}
	return u
}

// Placeholder is the value of p.KeyEnv in a box: it names roster and is
// never a secret. When oauth, it has an Anthropic OAuth token's prefix,
// because pi switches to OAuth request headers for keys containing
// "sk-ant-oat" and the gateway then injects the OAuth token it stands for.
func Placeholder(p creds.Provider, oauth bool) string {
	switch {
	case p.Style == creds.StyleAnthropic && oauth:
		return "sk-ant-oat01-roster-placeholder-the-gateway-injects-the-real-token"
	case p.Style == creds.StyleAnthropic:
		return "sk-ant-api03-roster-placeholder-the-gateway-injects-the-real-key"
	case p.Style == creds.StyleOpenAI:
		return "sk-roster-placeholder-the-gateway-injects-the-real-key"
	}
	return "roster-placeholder-the-gateway-injects-the-real-key"
}
