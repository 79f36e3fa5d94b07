package gateway

import (
	"slices"
	"time"
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
func BoxEnv(providers map[string]Provider, granted []string, c Creds, gw string, now time.Time) []string {
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
			cr, err := Lookup(p, c, now)
			env = append(env, p.KeyEnv+"="+Placeholder(p, err == nil && cr.OAuth))
		}
	}
	return env
}
