package runs

import (
	"math"
	"strings"
)

// Rate is a model's price: USD per million tokens of each kind (org.toml
// [gateway.prices], as config.Price says it).
type Rate struct{ Input, Output, CacheRead, CacheWrite float64 }

// RateOf finds model's rate: its exact name, else the longest priced name
// it extends with "-" (the gateway prices calls by it too).
func RateOf(rates map[string]Rate, model string) (Rate, bool) {
	if model == "" || model == UnattributedModel {
		return Rate{}, false
	}
	if r, ok := rates[model]; ok {
		return r, true
	}
	best, found := "", false
	for name := range rates {
		if strings.HasPrefix(model, name+"-") && len(name) > len(best) {
			best, found = name, true
		}
	}
	return rates[best], found
}

// Reprice recomputes u's spend from its recorded tokens by model at
// today's rates (prices change after the fact: a model priced since, or
// priced anew). A model with a rate gets the spend its tokens cost now,
// marked Repriced where that differs from what the run recorded; one
// without keeps its record (the unattributed "-" too); the run's total is
// the sum of its models'. A run without a ledger (no split by model) is
// left as recorded.
func Reprice(u *RunUsage, rates map[string]Rate) {
	if len(u.Models) == 0 || len(rates) == 0 {
		return
	}
	changed := false
	for name, m := range u.Models {
		r, ok := RateOf(rates, name)
		if !ok {
			continue
		}
		v := (float64(m.InputTokens)*r.Input + float64(m.OutputTokens)*r.Output +
			float64(m.CacheReadTokens)*r.CacheRead + float64(m.CacheWriteTokens)*r.CacheWrite) / 1e6
		if m.USD == nil || m.Unpriced > 0 || math.Abs(*m.USD-v) > 1e-9 {
			m.Repriced, changed = true, true
		}
		m.USD, m.Unpriced = &v, 0
	}
	if !changed {
		return
	}
	var total ModelUse
	for _, m := range u.Models {
		total.add(*m)
	}
	u.USD, u.Unpriced, u.Repriced = total.USD, total.Unpriced, true
}
