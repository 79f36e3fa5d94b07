package creds

import "github.com/roster-sh/roster/lib/config"

// OrgProviders is org.toml's providers (the built-ins with its
// [gateway.NAME] tables over them) in the gateway's terms.
func OrgProviders(org *config.Org) map[string]Provider {
	ps := map[string]Provider{}
	if org == nil {
		return ps
	}
	for n, p := range org.Gateway.Providers {
		ps[n] = Provider{Name: n, Style: p.API, Upstream: p.Upstream,
			Credentials: append([]string{}, p.Credentials...), KeyEnv: p.KeyEnv, BaseEnv: p.BaseEnv,
			Paths: append([]string{}, p.Paths...)}
	}
	return ps
}
