package box

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/creds"
	"github.com/roster-sh/roster/lib/gateway"
	"github.com/roster-sh/roster/lib/repos"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

// runGateway is what a gateway box's run needs: the gateway's maker for
// the supervisor and the provider variables for the box (each granted
// provider's base URL at its route, and a placeholder key shaped like the
// credential it stands for). The spec and org are the run's, as part
// carries them.
func runGateway(part *tms.Partition, s *Spec, task *tms.Task, now time.Time) (func() (Gateway, error), []string) {
	h, spec, org := part.Home, part.Spec, part.Org
	providers := creds.OrgProviders(org)
	sources := creds.Creds{VaultDir: h.Vault()}
	granted := append([]string{}, spec.Gateway.Providers...)
	sort.Strings(granted)
	env := gateway.BoxEnv(providers, granted, sources, BoxGatewayURL, now)
	cfg := gateway.Config{
		Worker: spec.Name, Providers: providers, Granted: granted,
		Allow: spec.Gateway.Allow, Inflight: spec.Gateway.Inflight, Prices: gatewayPrices(org), Creds: sources,
	}
	proactive := task != nil && task.Standing == tms.Proactive
	if proactive && (org.Budget.Tokens > 0 || org.Budget.USD > 0) {
		cfg.Budget = &gateway.Budget{Tokens: org.Budget.Tokens, USD: org.Budget.USD}
	}
	make := func() (Gateway, error) {
		cfg.Run, cfg.Ledger = s.Run, runs.GatewayLedger(s.RunDir) // the run's final id
		taskID := ""
		if task != nil {
			taskID = task.ID
		}
		git, err := runGit(part, sources, granted, s.Run, taskID, s.Knowledge)
		if err != nil {
			return nil, err
		}
		cfg.Git = git
		if cfg.Budget != nil {
			tokens, usd, err := runs.SpentToday(h, spec.Name, now, org.Zone())
			if err != nil {
				return nil, fmt.Errorf("the day's model usage: %w", err)
			}
			cfg.Budget.SpentTokens, cfg.Budget.SpentUSD = tokens, usd
		}
		g, err := gateway.New(cfg)
		if err != nil {
			return nil, err
		}
		return &served{g: g, git: git}, nil
	}
	return make, env
}

func gatewayPrices(org *config.Org) map[string]gateway.Price {
	ps := map[string]gateway.Price{}
	for m, p := range org.Gateway.Prices {
		ps[m] = gateway.Price(p)
	}
	return ps
}

// served adapts a gateway.Gateway to what the supervisor uses.
type served struct {
	g   *gateway.Gateway
	git *repos.Service // nil: no git route
}

// KnowledgeObjects writes the run's knowledge repo's main as git objects
// into the folder dir (nothing without one): what the box's pid 1 makes
// ~/knowledge from.
func (s *served) KnowledgeObjects(ctx context.Context, dir string) error {
	if s.git == nil {
		return nil
	}
	return s.git.KnowledgeObjects(ctx, dir)
}

func (s *served) Serve(l net.Listener) error { return s.g.Serve(l) }
func (s *served) Close() error               { return s.g.Close() }

// Report puts the gateway's figures into run.json (cost, gateway) and its
// refusals into the evidence the attestation reads.
func (s *served) Report(rec *runs.Record, ev *runs.Evidence) {
	sum, u := s.g.Summary()
	rec.Gateway = &sum
	rec.Cost.ModelCalls = u.ModelCalls
	rec.Cost.InputTokens, rec.Cost.OutputTokens = u.InputTokens, u.OutputTokens
	rec.Cost.CacheReadTokens, rec.Cost.CacheWriteTokens = u.CacheReadTokens, u.CacheWriteTokens
	rec.Cost.USD = u.USD
	rec.Cost.Estimated = u.Estimated
	if p, k := s.g.Pushes(), s.g.Knowledge(); len(p) > 0 || k != nil {
		rec.Git = &runs.GitRecord{Pushes: p, Knowledge: k}
	}
	if sum.Refused > 0 {
		ev.GatewayRefused = sum.Refused
		ev.GatewayRefusals = refusalKinds(sum.Refusals)
	}
}

// refusalKinds is "budget_spent" or "host_denied 2, ip_literal 1": the
// kinds a run was refused, most first.
func refusalKinds(m map[string]int) string {
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if m[kinds[i]] != m[kinds[j]] {
			return m[kinds[i]] > m[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	if len(kinds) == 1 {
		return kinds[0]
	}
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
