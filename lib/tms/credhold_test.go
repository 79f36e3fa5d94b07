package tms

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/creds"
)

func TestDueHoldsAWorkerWhoseProvidersHaveNoCredential(t *testing.T) {
	h := newHome(t, "dobby")
	org, err := config.ParseOrg("org.toml", []byte("[gateway.anthropic]\ncredentials = [\"vault\", \"env:ROSTER_TEST_KEY\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	org.Storage.MinFree = 0
	spec := &config.Worker{Name: "dobby", Command: []string{"/bin/true"}, Network: "gateway"}
	spec.Gateway.Providers = []string{"anthropic"}
	env := ""
	p, err := Open(h, "dobby", Options{Clock: &fakeClock{t: t0}, Org: org, Worker: spec, Getenv: func(string) string { return env }})
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, p, NewTask{Text: "t"})
	r, err := p.Due(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Claimable) != 0 || !strings.Contains(r.CredentialHold, "no credential in vault, env:ROSTER_TEST_KEY") ||
		r.Entries[0].Eligibility.Status != StateHeld || r.Entries[0].Eligibility.Why != "held: no model credential (anthropic)" {
		t.Fatalf("no key: claimable %d, hold %q, %+v", len(r.Claimable), r.CredentialHold, r.Entries[0].Eligibility)
	}
	// the environment's key, looked up at every call
	env = "sk-env"
	if r, _ := p.Due(ctx); len(r.Claimable) != 1 || r.CredentialHold != "" {
		t.Fatalf("env key: claimable %d, hold %q", len(r.Claimable), r.CredentialHold)
	}
	env = ""
	if err := creds.PutVault(h.Vault(), "anthropic", strings.NewReader("sk-vault")); err != nil {
		t.Fatal(err)
	}
	if r, _ := p.Due(ctx); len(r.Claimable) != 1 {
		t.Fatalf("vault key: claimable %d, hold %q", len(r.Claimable), r.CredentialHold)
	}
	// no provider, or no gateway: never held for credentials
	for _, s := range []*config.Worker{{Name: "dobby", Command: []string{"/bin/true"}, Network: "gateway"}, {Name: "dobby", Command: []string{"/bin/true"}, Network: "none"}} {
		if why, _ := ProviderHold(h, org, s, func(string) string { return "" }, t0); why != "" {
			t.Fatalf("%+v held: %s", s, why)
		}
	}
}

// An agent its boxes would not see holds the worker (SpecHold), with the
// install hint; installed, the next Due claims, with nothing else changed.
func TestDueHoldsAnAgentWorkerUntilItsAgentIsInstalled(t *testing.T) {
	h := newHome(t, "dobby")
	org, err := config.ParseOrg("org.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	org.Storage.MinFree = 0
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "usr", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := &config.Worker{Name: "dobby", Agent: "claude", Rootfs: root, Network: "none"}
	p, err := Open(h, "dobby", Options{Clock: &fakeClock{t: t0}, Org: org, Worker: spec})
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, p, NewTask{Text: "t"})
	r, err := p.Due(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := "claude: agent not installed: no executable claude on the box's PATH in " + root + " (hint: install Claude Code on the host"
	if len(r.Claimable) != 0 || !strings.HasPrefix(r.SpecHold, want) || r.Entries[0].Eligibility.Status != StateHeld ||
		!strings.HasPrefix(r.Entries[0].Eligibility.Why, "held: "+want) {
		t.Fatalf("not installed: claimable %d, hold %q, %+v", len(r.Claimable), r.SpecHold, r.Entries[0].Eligibility)
	}
	if err := os.WriteFile(filepath.Join(root, "usr", "bin", "claude"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r, _ := p.Due(ctx); len(r.Claimable) != 1 || r.SpecHold != "" {
		t.Fatalf("installed: claimable %d, hold %q", len(r.Claimable), r.SpecHold)
	}
}
