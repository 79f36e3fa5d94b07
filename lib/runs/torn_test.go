package runs

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A killed supervisor's ledger with a torn last line is left with its
// whole lines only; a whole one is untouched; a missing one is no error;
// a planted link or FIFO is refused and left as it is.
func TestDropTornLedgerTail(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"{\"seq\":1}\n", "{\"seq\":1}\n"},
		{"{\"seq\":1}\n{\"seq\":2,\"ki", "{\"seq\":1}\n"},
		{"{\"seq\":1,\"ki", ""},
		{"{\"seq\":1}\n" + strings.Repeat("x", 150<<10), "{\"seq\":1}\n"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(GatewayLedger(dir), []byte(tc.in), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := DropTornLedgerTail(dir); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(GatewayLedger(dir))
		if string(got) != tc.want {
			t.Fatalf("%.30q: left %.30q, want %q", tc.in, got, tc.want)
		}
	}
	if err := DropTornLedgerTail(t.TempDir()); err != nil {
		t.Fatalf("no ledger: %v", err)
	}
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	os.WriteFile(target, []byte("torn"), 0o644)
	os.Symlink(target, GatewayLedger(dir))
	if err := DropTornLedgerTail(dir); err == nil {
		t.Fatal("a link followed")
	}
	if data, _ := os.ReadFile(target); string(data) != "torn" {
		t.Fatalf("the link's target changed: %q", data)
	}
	dir = t.TempDir()
	if err := syscall.Mkfifo(GatewayLedger(dir), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := DropTornLedgerTail(dir); err == nil {
		t.Fatal("a FIFO taken for a ledger")
	}
}
