package web

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

func tokenHome(t *testing.T) home.Home {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	h, err := home.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestTokenIsMadeOnceWithMode0600(t *testing.T) {
	h := tokenHome(t)
	tok, made, err := LoadToken(h)
	if err != nil || !made || len(tok) != 64 {
		t.Fatalf("first start: %q %v %v", tok, made, err)
	}
	fi, err := os.Stat(h.WebToken())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("web-token: %v %v; want mode 0600", fi.Mode(), err)
	}
	again, made, err := LoadToken(h)
	if err != nil || made || again != tok {
		t.Fatalf("second start: %q %v %v; want the same token", again, made, err)
	}
	left, _ := filepath.Glob(h.WebToken() + ".tmp-*")
	if len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// Principle 4: a token file others may read, or that is not a token, is
// refused (14) and left as it is.
func TestBadTokenFileIsRefusedAndKept(t *testing.T) {
	for name, c := range map[string]struct {
		data string
		mode os.FileMode
	}{
		"readable by others": {testToken + "\n", 0o644},
		"not a token":        {"hello\n", 0o600},
	} {
		t.Run(name, func(t *testing.T) {
			h := tokenHome(t)
			if err := os.WriteFile(h.WebToken(), []byte(c.data), c.mode); err != nil {
				t.Fatal(err)
			}
			os.Chmod(h.WebToken(), c.mode)
			if _, _, err := LoadToken(h); !errors.Is(err, errs.ErrRefused) {
				t.Fatalf("LoadToken: %v; want refused", err)
			}
			if got, _ := os.ReadFile(h.WebToken()); string(got) != c.data {
				t.Fatalf("the file changed: %q", got)
			}
		})
	}
}

func TestLoopbackHostsAcceptLocalNamesOnly(t *testing.T) {
	got := LoopbackHosts("127.0.0.1:8790")
	want := map[string]bool{"127.0.0.1:8790": true, "localhost:8790": true, "[::1]:8790": true}
	for _, h := range got {
		if !want[h] {
			t.Errorf("unexpected host %q", h)
		}
		delete(want, h)
	}
	if len(want) > 0 {
		t.Errorf("missing %v", want)
	}
	if got := LoopbackHosts("192.0.2.1:443"); len(got) != 1 || got[0] != "192.0.2.1:443" {
		t.Errorf("a non-loopback address: %v", got)
	}
}
