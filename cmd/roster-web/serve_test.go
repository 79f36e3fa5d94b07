package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A non-loopback --listen without a certificate is refused (exit 2)
// before anything listens or any token is made.
func TestNonLoopbackListenNeedsTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no processes")
	}
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "data"), 0o700)
	for _, args := range [][]string{
		{"--listen", "0.0.0.0:0"},
		{"--listen", "192.0.2.1:8790"},
		{"--listen", "127.0.0.1:0", "--tls-cert", "x.pem"},
	} {
		cmd := exec.Command(filepath.Join(bin, "roster-web"), append([]string{"--home", dir, "serve"}, args...)...)
		out, err := cmd.CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "roster-web: error:") {
			t.Errorf("serve %v: %v\n%s; want exit 2", args, err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "web-token")); err == nil {
		t.Error("a refused start made the token")
	}
}
