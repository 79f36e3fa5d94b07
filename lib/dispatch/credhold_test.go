package dispatch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roster-sh/roster/lib/creds"
)

const credOrg = `
[gateway.anthropic]
credentials = ["vault", "env:ROSTER_TEST_ANTHROPIC"]
`

func TestWorkerHeldWhileItsProvidersHaveNoCredentialResumesByItself(t *testing.T) {
	f := newFixture(t, credOrg)
	f.worker("agent", "[gateway]\nproviders = [\"anthropic\"]")
	f.worker("plain", "") // uses no provider: never held for credentials
	f.add("agent", 1)
	f.add("plain", 1)
	d := f.dispatcher(Options{Getenv: func(string) string { return "" }})
	plainStarted := 0
	for i := 0; i < 3; i++ {
		rep := d.Tick(context.Background())
		for _, st := range rep.Started {
			if st.Worker != "plain" {
				t.Fatalf("tick %d started %+v", i, st)
			}
			plainStarted++
		}
		if why := rep.WorkerHolds["agent"]; !strings.Contains(why, "no credential in vault, env:ROSTER_TEST_ANTHROPIC") {
			t.Fatalf("tick %d: agent not held for its provider: %q", i, why)
		}
		if _, held := rep.WorkerHolds["plain"]; held || rep.Held != "" {
			t.Fatalf("tick %d: plain held (%v, %q)", i, rep.WorkerHolds, rep.Held)
		}
	}
	if n := f.claimed("agent"); n != 0 {
		t.Fatalf("the held worker's task was claimed (%d)", n)
	}
	if plainStarted != 1 {
		t.Fatalf("the worker without providers: %d claims, want 1", plainStarted)
	}
	if n := f.log.count("worker held"); n != 1 {
		t.Fatalf("hold logged %d times, want once:\n%s", n, f.log)
	}
	// A key appears in the vault: the next tick claims, and the end is logged once.
	if err := creds.PutVault(f.h.Vault(), "anthropic", strings.NewReader("sk-ant-test\n")); err != nil {
		t.Fatal(err)
	}
	rep := d.Tick(context.Background())
	if len(rep.WorkerHolds) != 0 || len(rep.Started) != 1 || rep.Started[0].Worker != "agent" {
		t.Fatalf("after the key: holds %v, started %+v", rep.WorkerHolds, rep.Started)
	}
	d.Tick(context.Background())
	if n := f.log.count("worker hold ended"); n != 1 {
		t.Fatalf("hold end logged %d times, want once:\n%s", n, f.log)
	}
	if strings.Contains(f.log.String(), "sk-ant-test") {
		t.Fatalf("the key is in the log:\n%s", f.log)
	}
}

func TestWorkerHoldFollowsTheProvidersSourcesAndModeRules(t *testing.T) {
	f := newFixture(t, credOrg)
	f.worker("agent", "[gateway]\nproviders = [\"anthropic\"]")
	f.add("agent", 2)
	// the env: source, in the dispatcher's environment fixed at its start
	env := func(k string) string {
		if k == "ROSTER_TEST_ANTHROPIC" {
			return "sk-from-env"
		}
		return ""
	}
	if rep := f.dispatcher(Options{Getenv: env}).Tick(context.Background()); len(rep.Started) != 1 || len(rep.WorkerHolds) != 0 {
		t.Fatalf("env credential: started %d, holds %v", len(rep.Started), rep.WorkerHolds)
	}
	// a vault key open to others is refused by name (and the lookup stops there)
	if err := creds.PutVault(f.h.Vault(), "anthropic", strings.NewReader("sk-ant-test")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(f.h.Vault(), "anthropic"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := f.dispatcher(Options{Getenv: env}).Tick(context.Background())
	if why := rep.WorkerHolds["agent"]; !strings.Contains(why, "readable by group or others") || len(rep.Started) != 0 {
		t.Fatalf("a vault key open to others: started %d, hold %q", len(rep.Started), why)
	}
}
