package creds

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/errs"
)

var testNow = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// testCreds is a vault and a pi folder in a temporary folder and an
// environment of its own (never the test process's).
func testCreds(t *testing.T, env map[string]string) Creds {
	t.Helper()
	d := t.TempDir()
	if env == nil {
		env = map[string]string{}
	}
	return Creds{VaultDir: filepath.Join(d, "vault"), PiDir: filepath.Join(d, "pi"), Env: envMap(env)}
}

func writePi(t *testing.T, c Creds, body string) {
	t.Helper()
	if err := os.MkdirAll(c.PiDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.PiDir, "auth.json"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func anthropic() Provider { return BuiltinProviders()["anthropic"] }

func TestLookupSourcesInOrder(t *testing.T) {
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-env"}
	c := testCreds(t, env)
	p := anthropic()

	cr, err := Lookup(p, c, testNow)
	if err != nil || cr.Value != "sk-ant-env" || cr.Source != "env:ANTHROPIC_API_KEY" || cr.OAuth {
		t.Fatalf("env only: %+v %v", cr, err)
	}
	writePi(t, c, fmt.Sprintf(`{"anthropic":{"type":"oauth","access":"sk-ant-oat01-pi","refresh":"r","expires":%d}}`, testNow.Add(time.Hour).UnixMilli()))
	cr, err = Lookup(p, c, testNow)
	if err != nil || cr.Value != "sk-ant-oat01-pi" || cr.Source != "pi" || !cr.OAuth {
		t.Fatalf("pi over env: %+v %v", cr, err)
	}
	if err := PutVault(c.VaultDir, "anthropic", strings.NewReader("sk-ant-vault\n")); err != nil {
		t.Fatal(err)
	}
	cr, err = Lookup(p, c, testNow)
	if err != nil || cr.Value != "sk-ant-vault" || cr.Source != "vault" || cr.OAuth {
		t.Fatalf("vault first: %+v %v", cr, err)
	}
	src, err := Which(p, c, testNow)
	if err != nil || src != "vault" {
		t.Fatalf("Which = %q %v", src, err)
	}
}

func TestLookupNoCredential(t *testing.T) {
	c := testCreds(t, nil)
	_, err := Lookup(anthropic(), c, testNow)
	if !errors.Is(err, ErrNoCredential) || !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
	if errs.HintOf(err) == "" {
		t.Fatal("no hint")
	}
}

func TestLookupPiExpiredIsCredentialExpired(t *testing.T) {
	c := testCreds(t, nil)
	writePi(t, c, fmt.Sprintf(`{"anthropic":{"type":"oauth","access":"sk-ant-oat01-old","refresh":"r","expires":%d}}`, testNow.Add(-time.Minute).UnixMilli()))
	_, err := Lookup(anthropic(), c, testNow)
	if !errors.Is(err, ErrCredentialExpired) {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(errs.HintOf(err), "run pi on the host") {
		t.Fatalf("hint = %q", errs.HintOf(err))
	}
	if strings.Contains(err.Error(), "sk-ant-oat01-old") {
		t.Fatal("error quotes the token")
	}
	// A later source still serves.
	c.Env = envMap(map[string]string{"ANTHROPIC_API_KEY": "sk-ant-env"})
	cr, err := Lookup(anthropic(), c, testNow)
	if err != nil || cr.Source != "env:ANTHROPIC_API_KEY" {
		t.Fatalf("fallback: %+v %v", cr, err)
	}
}

func TestLookupPiAPIKeyAndEnvName(t *testing.T) {
	c := testCreds(t, map[string]string{"MY_KEY": "sk-from-var"})
	p := BuiltinProviders()["openai"]
	writePi(t, c, `{"openai":{"type":"api_key","key":"sk-literal"}}`)
	if cr, err := Lookup(p, c, testNow); err != nil || cr.Value != "sk-literal" || cr.OAuth {
		t.Fatalf("literal: %+v %v", cr, err)
	}
	writePi(t, c, `{"openai":{"type":"api_key","key":"MY_KEY"}}`)
	if cr, err := Lookup(p, c, testNow); err != nil || cr.Value != "sk-from-var" {
		t.Fatalf("env name: %+v %v", cr, err)
	}
	writePi(t, c, `{"openai":{"type":"api_key","key":"!cat /etc/shadow"}}`)
	if _, err := Lookup(p, c, testNow); !errors.Is(err, ErrNoCredential) {
		t.Fatalf("shell command key: %v", err)
	}
	writePi(t, c, `{"openai":{"type":"api_k`) // torn while pi writes
	if _, err := Lookup(p, c, testNow); !errors.Is(err, ErrNoCredential) {
		t.Fatalf("torn auth.json: %v", err)
	}
}

func TestPiDirFromEnvironment(t *testing.T) {
	d := t.TempDir()
	c := Creds{Env: envMap(map[string]string{"PI_CODING_AGENT_DIR": d})}
	if got := PiAuthFile(c); got != filepath.Join(d, "auth.json") {
		t.Fatalf("PiAuthFile = %s", got)
	}
	c = Creds{Env: envMap(map[string]string{"HOME": d})}
	if got := PiAuthFile(c); got != filepath.Join(d, ".pi", "agent", "auth.json") {
		t.Fatalf("PiAuthFile = %s", got)
	}
}

func TestVaultFileOpenToOthersIsRefused(t *testing.T) {
	c := testCreds(t, map[string]string{"ANTHROPIC_API_KEY": "sk-ant-env"})
	if err := PutVault(c.VaultDir, "anthropic", strings.NewReader("sk-ant-vault")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(c.VaultDir, "anthropic")
	for _, mode := range []os.FileMode{0o640, 0o604, 0o644} {
		os.Chmod(path, mode)
		_, err := Lookup(anthropic(), c, testNow)
		if !errors.Is(err, ErrUnsafeMode) || !errors.Is(err, errs.ErrRefused) {
			t.Fatalf("mode %o: err = %v (no fallback to env expected)", mode, err)
		}
		if !strings.Contains(err.Error(), path) || errs.HintOf(err) != "chmod 600 "+path {
			t.Fatalf("mode %o: message %q hint %q", mode, err, errs.HintOf(err))
		}
	}
	os.Chmod(path, 0o600)
	os.Chmod(c.VaultDir, 0o755)
	if _, err := Lookup(anthropic(), c, testNow); !errors.Is(err, ErrUnsafeMode) || errs.HintOf(err) != "chmod 700 "+c.VaultDir {
		t.Fatalf("open vault folder: %v", err)
	}
	os.Chmod(c.VaultDir, 0o700)
	if cr, err := Lookup(anthropic(), c, testNow); err != nil || cr.Source != "vault" {
		t.Fatalf("after chmod: %+v %v", cr, err)
	}
}

func TestVaultSymlinkNotFollowed(t *testing.T) {
	c := testCreds(t, nil)
	if err := os.MkdirAll(c.VaultDir, 0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "k")
	os.WriteFile(target, []byte("sk-ant-elsewhere"), 0o600)
	os.Symlink(target, filepath.Join(c.VaultDir, "anthropic"))
	_, err := Lookup(anthropic(), c, testNow)
	if err == nil || errors.Is(err, ErrNoCredential) {
		t.Fatalf("symlinked vault key: %v", err)
	}
}

func TestFileSourceModeRule(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key")
	os.WriteFile(path, []byte("sk-ant-oat01-file\n"), 0o644)
	p := anthropic()
	p.Credentials = []string{"file:" + path}
	c := testCreds(t, nil)
	if _, err := Lookup(p, c, testNow); !errors.Is(err, ErrUnsafeMode) {
		t.Fatalf("0644: %v", err)
	}
	os.Chmod(path, 0o600)
	cr, err := Lookup(p, c, testNow)
	if err != nil || cr.Value != "sk-ant-oat01-file" || !cr.OAuth || cr.Source != "file:"+path {
		t.Fatalf("0600: %+v %v", cr, err)
	}
}

func TestPutVault(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vault")
	if err := PutVault(dir, "anthropic", strings.NewReader("sk-one\n")); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(dir)
	if st.Mode().Perm() != 0o700 {
		t.Fatalf("vault mode %o", st.Mode().Perm())
	}
	path := filepath.Join(dir, "anthropic")
	st, _ = os.Stat(path)
	data, _ := os.ReadFile(path)
	if st.Mode().Perm() != 0o600 || string(data) != "sk-one" {
		t.Fatalf("file %o %q", st.Mode().Perm(), data)
	}
	// Replace; a folder made too open is reset.
	os.Chmod(dir, 0o755)
	if err := PutVault(dir, "anthropic", strings.NewReader("sk-two\r\n")); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(path)
	st, _ = os.Stat(dir)
	if string(data) != "sk-two" || st.Mode().Perm() != 0o700 {
		t.Fatalf("replace: %q %o", data, st.Mode().Perm())
	}
	for name, in := range map[string]string{"empty": "", "newline only": "\n", "blank": "  \n", "two lines": "a\nb\n"} {
		err := PutVault(dir, "anthropic", strings.NewReader(in))
		if !errors.Is(err, errs.ErrUsage) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if data, _ = os.ReadFile(path); string(data) != "sk-two" {
		t.Fatalf("a refused key touched the vault: %q", data)
	}
	for _, bad := range []string{"", "../x", "a/b", "-x", "UP"} {
		if err := PutVault(dir, bad, strings.NewReader("k")); !errors.Is(err, errs.ErrUsage) {
			t.Errorf("provider %q: %v", bad, err)
		}
	}
	if err := RemoveVault(dir, "anthropic"); err != nil {
		t.Fatal(err)
	}
	if err := RemoveVault(dir, "anthropic"); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("remove twice: %v", err)
	}
}

func TestCheckSource(t *testing.T) {
	for _, ok := range []string{"vault", "pi", "env:X", "file:/etc/k"} {
		if err := CheckSource(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "env:", "file:rel", "keychain"} {
		if err := CheckSource(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestSettledKeyFileChanges: a key file that has settled is served from
// keyFiles, and still every change is seen at the next lookup: a rewrite
// in place of the same length, an atomic rotation, a chmod, a symlink put
// in its place and a removal.
func TestSettledKeyFileChanges(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "key")
	os.WriteFile(path, []byte("sk-ant-one\n"), 0o600)
	p := anthropic()
	p.Credentials = []string{"file:" + path}
	c := testCreds(t, nil)
	want := func(what, value string) {
		t.Helper()
		cr, err := Lookup(p, c, testNow)
		if err != nil || cr.Value != value {
			t.Fatalf("%s: %+v %v, want %s", what, cr, err, value)
		}
	}
	cached := func() bool {
		keyFiles.mu.Lock()
		defer keyFiles.mu.Unlock()
		_, ok := keyFiles.m[path]
		return ok
	}
	want("fresh", "sk-ant-one")
	if cached() {
		t.Fatal("a file changed within the settle time was cached")
	}
	time.Sleep(settle + 100*time.Millisecond) // let it settle (a wait, not a time measured)
	want("settled", "sk-ant-one")
	if !cached() {
		t.Fatal("a settled key file was not cached")
	}
	want("cached", "sk-ant-one")

	os.WriteFile(path, []byte("sk-ant-two\n"), 0o600) // in place, same length, same tick maybe
	want("rewritten in place", "sk-ant-two")
	tmp := filepath.Join(dir, "key.new")
	os.WriteFile(tmp, []byte("sk-ant-three\n"), 0o600)
	os.Rename(tmp, path)
	want("rotated", "sk-ant-three")
	os.Chmod(path, 0o640)
	if _, err := Lookup(p, c, testNow); !errors.Is(err, ErrUnsafeMode) {
		t.Fatalf("chmod 640: %v", err)
	}
	os.Chmod(path, 0o600)
	want("chmod back", "sk-ant-three")
	os.Remove(path)
	os.Symlink(tmp+".elsewhere", path)
	os.WriteFile(tmp+".elsewhere", []byte("sk-ant-elsewhere\n"), 0o600)
	if cr, err := Lookup(p, c, testNow); err == nil || errors.Is(err, ErrNoCredential) {
		t.Fatalf("symlink in its place: %+v %v", cr, err)
	}
	os.Remove(path)
	if _, err := Lookup(p, c, testNow); !errors.Is(err, ErrNoCredential) {
		t.Fatalf("removed: %v", err)
	}
}
