package dispatch

import (
	"fmt"
	"strings"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/gateway"
)

// The per-worker credential hold (docs/gateway.md, "Dispatch hold"): a
// worker whose boxes get a gateway and whose [gateway] providers have no
// credential in reach is held: its tasks stay pending, the hold is logged
// once when it starts and once when it ends, and it resumes by itself at
// the first tick a credential is there. Any one provider with a
// credential is enough (as with [dispatch] credentials). A worker with no
// provider, or whose box has no gateway (network "none" or "host"), is
// never held for credentials. Credentials are looked up as the run's
// gateway will look them up, in the dispatcher's environment, which its
// supervisors inherit; nothing is cached, and no key is ever logged.

// providerHold returns why spec's worker is held for credentials, or "".
func (d *Dispatcher) providerHold(org *config.Org, spec *config.Worker) string {
	if spec == nil || spec.Network != "gateway" || len(spec.Gateway.Providers) == 0 {
		return ""
	}
	creds := gateway.Creds{VaultDir: d.h.Vault(), Env: d.lookupEnv}
	var why []string
	for _, name := range spec.Gateway.Providers {
		p, ok := org.Gateway.Providers[name]
		if !ok {
			why = append(why, fmt.Sprintf("%s: not a provider of org.toml", name))
			continue
		}
		_, err := gateway.Lookup(gatewayProvider(p), creds, d.clock.Now())
		if err == nil {
			return ""
		}
		why = append(why, err.Error())
	}
	return "no model credential in reach (" + strings.Join(why, "; ") + ")"
}

// lookupEnv is the dispatcher's environment as the credential sources read
// it (the one its supervisors inherit).
func (d *Dispatcher) lookupEnv(name string) (string, bool) {
	v := d.getenv(name)
	return v, v != ""
}

func gatewayProvider(p config.Provider) gateway.Provider {
	return gateway.Provider{Name: p.Name, Style: p.API, Upstream: p.Upstream,
		Credentials: p.Credentials, KeyEnv: p.KeyEnv, BaseEnv: p.BaseEnv}
}

// holdWorkers drops from ready the workers held for credentials, logging
// each hold when it starts and when it ends, and returns the held ones and
// why. Only a worker with claimable work is looked at: the others cannot
// be held from anything, and their state is left as it was.
func (d *Dispatcher) holdWorkers(org *config.Org, ready []*workerState) (kept []*workerState, held map[string]string) {
	if d.credHeld == nil {
		d.credHeld = map[string]string{}
	}
	kept = ready[:0:0]
	for _, ws := range ready {
		if len(ws.due) == 0 {
			kept = append(kept, ws)
			continue
		}
		why := d.providerHold(org, ws.spec)
		was, wasHeld := d.credHeld[ws.name]
		switch {
		case why == "" && wasHeld:
			d.log.Info("worker hold ended: a model credential is in reach", "worker", ws.name, "was", was)
			delete(d.credHeld, ws.name)
		case why != "" && !wasHeld:
			d.log.Warn("worker held: claiming nothing for it", "worker", ws.name, "why", why)
			d.credHeld[ws.name] = why
		}
		if why == "" {
			kept = append(kept, ws)
			continue
		}
		if held == nil {
			held = map[string]string{}
		}
		held[ws.name] = why
	}
	return kept, held
}
