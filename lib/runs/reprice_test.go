package runs

import "testing"

func TestRateOfAndReprice(t *testing.T) {
	rates := map[string]Rate{"claude-sonnet-4-5": {Input: 3, Output: 15}, "claude": {Input: 1}}
	if r, ok := RateOf(rates, "claude-sonnet-4-5-20250929"); !ok || r.Output != 15 {
		t.Fatalf("longest prefix: %+v %v", r, ok)
	}
	if _, ok := RateOf(rates, "claudex"); ok {
		t.Fatal("a prefix without '-' priced")
	}
	if _, ok := RateOf(rates, UnattributedModel); ok {
		t.Fatal("the unattributed row priced")
	}
	old := 0.5
	u := RunUsage{ModelUse: ModelUse{Calls: 3, USD: &old, Unpriced: 1}, Models: map[string]*ModelUse{
		"claude-sonnet-4-5": {Calls: 1, InputTokens: 1e6, OutputTokens: 1e5, USD: &old},
		"gpt-x":             {Calls: 1, InputTokens: 10, Unpriced: 1},
		UnattributedModel:   {Calls: 1, InputTokens: 5},
	}}
	Reprice(&u, rates)
	// 1M in at $3 + 100k out at $15 = $4.50; gpt-x and "-" keep theirs.
	if !u.Repriced || u.USD == nil || *u.USD != 4.5 || u.Unpriced != 1 || !u.Models["claude-sonnet-4-5"].Repriced || u.Models["gpt-x"].Repriced {
		t.Fatalf("repriced %+v, models %+v", u.ModelUse, *u.Models["claude-sonnet-4-5"])
	}
	same := 4.5
	v := RunUsage{ModelUse: ModelUse{USD: &same}, Models: map[string]*ModelUse{"claude-sonnet-4-5": {InputTokens: 1e6, OutputTokens: 1e5, USD: &same}}}
	Reprice(&v, rates)
	if v.Repriced {
		t.Fatal("an unchanged price marked re-priced")
	}
}
