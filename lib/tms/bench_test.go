package tms

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/home"
)

// seedPending writes a consistent partition with n pending tasks straight
// to disk (tasks.json at version n, a journal whose last line is version n),
// as bench/tasks.sh does.
func seedPending(tb testing.TB, h home.Home, worker string, n int) {
	tb.Helper()
	w := h.Worker(worker)
	for _, d := range []string{w.Tasks(), w.View()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	f := &File{Format: Format, Version: int64(n)}
	for i := 0; i < n; i++ {
		f.Tasks = append(f.Tasks, Task{ID: fmt.Sprintf("t-2026-01-01-00-00-00-%05d", i),
			Text: fmt.Sprintf("benchmark task number %d with a sentence of ordinary length", i),
			Kind: KindFiled, Standing: Owner, State: Pending, CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), By: ByOwner})
	}
	if err := os.WriteFile(w.TasksFile(), encodeFile(f, "", time.Time{}), 0o600); err != nil {
		tb.Fatal(err)
	}
	var j []byte
	if n > 0 {
		l, _ := json.Marshal(Line{Seq: int64(n), Version: int64(n), At: t0, Event: EvFiled, Task: f.Tasks[n-1].ID, By: ByOwner,
			Records: []Record{taskRec(f.Tasks[n-1], false)}})
		j = append(l, '\n')
	}
	if err := os.WriteFile(w.Journal(), j, 0o600); err != nil {
		tb.Fatal(err)
	}
}

func benchmarkAdd(b *testing.B, pending int) {
	pending = max(0, min(pending, MaxOpenTasks-b.N)) // the adds end at the cap
	h := newHome(b, "w")
	seedPending(b, h, "w", pending)
	p, _ := open(b, h, "w")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := p.Add(ctx, NewTask{Text: "bench add"}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAdd0(b *testing.B)     { benchmarkAdd(b, 0) }
func BenchmarkAdd1000(b *testing.B)  { benchmarkAdd(b, 1000) }
func BenchmarkAdd10000(b *testing.B) { benchmarkAdd(b, 10000) }

// BenchmarkOpen is what every roster-task verb pays before it touches the
// partition: the worker spec and org.toml.
func BenchmarkOpen(b *testing.B) {
	h := newHome(b, "w")
	if err := os.WriteFile(h.Dir+"/workers/w.toml", []byte("heartbeat = \"off\"\nuid = 200001\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Open(h, "w", Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode10000(b *testing.B) {
	h := newHome(b, "w")
	seedPending(b, h, "w", 10000)
	data, err := os.ReadFile(h.Worker("w").TasksFile())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.Run("raw", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, _, ok := decodeRaw(data); !ok {
				b.Fatal("slow path")
			}
		}
	})
	b.Run("fast", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, _, ok := decodeFast(data); !ok {
				b.Fatal("slow path")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := decodeSlow("x", data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
