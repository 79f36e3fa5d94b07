package gateway

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/creds"
	"github.com/roster-sh/roster/lib/errs"
)

var testNow = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// testCreds is a vault and a pi folder in a temporary folder and an
// environment of its own (never the test process's).
func testCreds(t *testing.T, env map[string]string) creds.Creds {
	t.Helper()
	d := t.TempDir()
	if env == nil {
		env = map[string]string{}
	}
	return creds.Creds{VaultDir: filepath.Join(d, "vault"), PiDir: filepath.Join(d, "pi"), Env: envMap(env)}
}

func writePi(t *testing.T, c creds.Creds, body string) {
	t.Helper()
	if err := os.MkdirAll(c.PiDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.PiDir, "auth.json"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestPlaceholderNamesRosterAndHasTheCredentialsForm(t *testing.T) {
	b := creds.BuiltinProviders()
	for _, tc := range []struct {
		p      creds.Provider
		oauth  bool
		prefix string
	}{
		{b["anthropic"], true, "sk-ant-oat01-"},
		{b["anthropic"], false, "sk-ant-api03-"},
		{b["openai"], false, "sk-"},
	} {
		ph := Placeholder(tc.p, tc.oauth)
		if !strings.HasPrefix(ph, tc.prefix) || !strings.Contains(ph, "roster-placeholder") {
			t.Errorf("%s oauth=%v: %q", tc.p.Name, tc.oauth, ph)
		}
	}
	if strings.Contains(Placeholder(b["anthropic"], false), "oat") {
		t.Error("API-key placeholder looks like an OAuth token to pi")
	}
}

func TestBoxBaseURL(t *testing.T) {
	b := creds.BuiltinProviders()
	if got := BoxBaseURL(b["anthropic"], "http://127.0.0.1:3128"); got != "http://127.0.0.1:3128/anthropic" {
		t.Error(got)
	}
	if got := BoxBaseURL(b["openai"], "http://127.0.0.1:3128/"); got != "http://127.0.0.1:3128/openai/v1" {
		t.Error(got)
	}
}

func TestBoxEnvHoldsPlaceholdersShapedLikeTheCredential(t *testing.T) {
	c := testCreds(t, map[string]string{"OPENAI_API_KEY": "sk-SECRET-openai"})
	writePi(t, c, fmt.Sprintf(`{"anthropic":{"type":"oauth","access":"sk-ant-oat01-SECRET","refresh":"r","expires":%d}}`, testNow.Add(time.Hour).UnixMilli()))
	env := BoxEnv(creds.BuiltinProviders(), []string{"openai", "anthropic", "openai", "nosuch"}, c, "http://127.0.0.1:3128", testNow)
	want := []string{
		"ANTHROPIC_BASE_URL=http://127.0.0.1:3128/anthropic",
		"ANTHROPIC_API_KEY=" + Placeholder(creds.BuiltinProviders()["anthropic"], true),
		"OPENAI_BASE_URL=http://127.0.0.1:3128/openai/v1",
		"OPENAI_API_KEY=" + Placeholder(creds.BuiltinProviders()["openai"], false),
	}
	if strings.Join(env, "\n") != strings.Join(want, "\n") {
		t.Fatalf("env:\n%s", strings.Join(env, "\n"))
	}
	for _, e := range env {
		if strings.Contains(e, "SECRET") {
			t.Fatalf("a credential in the box's environment: %s", e)
		}
	}
	// CheckAllow only parses (parseGrants takes no resolver or dialer): the
	// names are never looked up, so reserved test names serve as well.
	if err := CheckAllow([]string{"git.example", "10.0.0.0/8:5432"}); err != nil {
		t.Fatal(err)
	}
	if err := CheckAllow([]string{"git.example", "https://x"}); !errors.Is(err, errs.ErrUsage) || !strings.Contains(err.Error(), `"https://x"`) {
		t.Fatalf("CheckAllow: %v", err)
	}
}
