package runs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type scanned struct {
	n    int
	raw  string
	err  bool
	torn bool
	seq  int64
}

func scanAll(t *testing.T, data string) []scanned {
	t.Helper()
	var out []scanned
	err := scanLedger(strings.NewReader(data), func(l LedgerLine) error {
		out = append(out, scanned{l.N, string(l.Raw), l.Err != nil, l.Torn, l.Entry.Seq})
		if l.Err != nil && !errors.Is(l.Err, ErrLedgerLine) {
			t.Errorf("line %d: error %v does not wrap ErrLedgerLine", l.N, l.Err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestScanLedgerToleratesTornLastLine(t *testing.T) {
	got := scanAll(t, `{"seq":1,"kind":"model"}`+"\n"+`{"seq":2,"ki`)
	if len(got) != 2 || got[0].err || got[0].seq != 1 || !got[1].torn || !got[1].err || got[1].raw != `{"seq":2,"ki` {
		t.Fatalf("got %+v", got)
	}
	// a complete object without its newline is torn all the same
	got = scanAll(t, `{"seq":1}`)
	if len(got) != 1 || !got[0].torn || !got[0].err {
		t.Fatalf("got %+v", got)
	}
	if got := scanAll(t, ""); len(got) != 0 {
		t.Fatalf("empty ledger: %+v", got)
	}
}

func TestScanLedgerSkipsOversizedLinesInBoundedMemory(t *testing.T) {
	big := `{"seq":2,"host":"` + strings.Repeat("a", 3*LedgerMaxLine) + `"}`
	got := scanAll(t, `{"seq":1}`+"\n"+big+"\n"+`{"seq":3}`+"\n"+big)
	if len(got) != 4 {
		t.Fatalf("got %d lines", len(got))
	}
	if got[0].seq != 1 || !got[1].err || got[1].raw != "" || got[2].seq != 3 || got[2].err || !got[3].torn || got[3].raw != "" {
		t.Fatalf("got %+v", []scanned{got[0], {n: got[1].n, err: got[1].err}, got[2], {n: got[3].n, torn: got[3].torn}})
	}
}

func TestScanLedgerRefusesWhatNoGatewayWrites(t *testing.T) {
	for _, line := range []string{`null`, `[1]`, `"x"`, `{"seq":"one"}`, `{"input_tokens":-5}`, `{"cost_usd":-1}`, "{\"seq\":1", ``} {
		got := scanAll(t, line+"\n")
		if len(got) != 1 || !got[0].err {
			t.Errorf("%q: got %+v, want a refused line", line, got)
		}
	}
}

func TestScanLedgerFileIsNeverALink(t *testing.T) {
	dir := t.TempDir()
	if err := ScanLedger(dir, func(LedgerLine) error { return nil }); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing ledger: %v", err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "gateway.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := ScanLedger(dir, func(LedgerLine) error { return nil }); err == nil {
		t.Fatal("a symlinked ledger was read")
	}
}

func FuzzScanLedger(f *testing.F) {
	f.Add([]byte(`{"seq":1,"kind":"model","model":"m","input_tokens":3}` + "\n" + `{"seq":2`))
	f.Add([]byte("\n\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := 0
		err := scanLedger(bytes.NewReader(data), func(l LedgerLine) error {
			lines++
			if l.N != lines {
				t.Fatalf("line numbers skip: %d after %d", l.N, lines-1)
			}
			if l.Torn && l.Err == nil {
				t.Fatal("a torn line decoded as an entry")
			}
			if l.Err == nil && (l.Entry.InputTokens < 0 || l.Entry.OutputTokens < 0) {
				t.Fatal("negative tokens accepted")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := bytes.Count(data, []byte("\n")); len(data) > 0 && data[len(data)-1] != '\n' {
			want++
			if lines != want {
				t.Fatalf("%d lines, want %d", lines, want)
			}
		} else if lines != want {
			t.Fatalf("%d lines, want %d", lines, want)
		}
	})
}
