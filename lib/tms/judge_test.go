package tms

import (
	"testing"

	"github.com/roster-sh/roster/lib/runs"
)

// TestRunWithoutReportAfterGatewayRefusalsFailsWithThem: the seed's rule
// (docs/gateway.md) — a run that ends without a report after refused
// gateway calls is failed with those refusals as its reason; a report of
// its own keeps its reason, and a run with no refusals keeps none.
func TestRunWithoutReportAfterGatewayRefusalsFailsWithThem(t *testing.T) {
	cases := []struct {
		ev      runs.Evidence
		verdict string
		reason  string
	}{
		{runs.Evidence{Report: "none", GatewayRefused: 3, GatewayRefusals: "budget_spent"}, Failed, "gateway refused 3 calls (budget_spent)"},
		{runs.Evidence{Report: "", GatewayRefused: 1, GatewayRefusals: "host_denied"}, Failed, "gateway refused 1 call (host_denied)"},
		{runs.Evidence{Report: "fail", Reason: "no key", GatewayRefused: 2, GatewayRefusals: "no_credential"}, Failed, "no key"},
		{runs.Evidence{Report: "complete", GatewayRefused: 2, GatewayRefusals: "host_denied"}, Completed, ""},
		{runs.Evidence{Report: "none"}, Failed, ""},
	}
	for _, c := range cases {
		ev := c.ev
		if v := Judge(&ev); v != c.verdict || ev.Reason != c.reason {
			t.Errorf("Judge(%+v) = %q, reason %q; want %q, %q", c.ev, v, ev.Reason, c.verdict, c.reason)
		}
	}
}
