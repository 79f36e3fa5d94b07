package tms

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// longTailJournal writes a journal whose last versioned line is n bytes
// long, followed by versionless action lines: the shape issue 17 left (a
// 41.6 MB set line, then every later action reading back past it).
func longTailJournal(t testing.TB, n int) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	var b strings.Builder
	for i, l := range []Line{
		{Seq: 1, Version: 1, At: t0, Event: EvFiled, Task: "t-2026-11-29-19-22-01-k3v9", By: ByOwner},
		{Seq: 2, Version: 2, At: t0, Event: EvSet, By: ByWorker, Reason: strings.Repeat("x", n)},
		{Seq: 3, At: t0.Add(time.Second), Event: EvAction, Task: "t-2026-11-29-19-22-01-k3v9", By: ByWorker},
		{Seq: 4, At: t0.Add(time.Second), Event: EvAction, Task: "t-2026-11-29-19-22-01-k3v9", By: ByWorker},
	} {
		data, err := json.Marshal(l)
		if err != nil {
			t.Fatal(i, err)
		}
		b.Write(data)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestTailOfReadsBackPastALongLine(t *testing.T) {
	for _, n := range []int{0, 1, 16<<10 - 40, 16 << 10, 5 << 20} {
		f := longTailJournal(t, n)
		seq, ver, err := tailOf(f)
		if err != nil || seq != 4 || ver != 2 {
			t.Fatalf("line of %d bytes: seq %d version %d err %v; want 4 2", n, seq, ver, err)
		}
	}
}

// BenchmarkTailOfLongLine: a 40 MB versioned line behind the tail (issue
// 17's shape); linear, where the old carry-and-copy loop was quadratic.
func BenchmarkTailOfLongLine(b *testing.B) {
	f := longTailJournal(b, 40<<20)
	for b.Loop() {
		if _, _, err := tailOf(f); err != nil {
			b.Fatal(err)
		}
	}
}
