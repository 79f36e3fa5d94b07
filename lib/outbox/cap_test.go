package outbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestEveryEntryCountsTowardTheActionCap(t *testing.T) {
	dir, r := newOutbox(t)
	const extra = 50
	for i := 0; i < MaxActions+extra; i++ {
		name := fmt.Sprintf("junk-%d", i) // refused: not N.json
		if i%10 == 0 {
			name = fmt.Sprintf("%d.json", i+1) // refused: not JSON
		}
		if err := os.WriteFile(filepath.Join(dir, "new", name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	taken := 0
	for {
		es, err := r.Poll()
		if err != nil {
			t.Fatal(err)
		}
		if len(es) == 0 {
			break
		}
		taken += len(es)
	}
	if taken != MaxActions || !r.Capped() {
		t.Fatalf("took %d entries (capped %v), want %d", taken, r.Capped(), MaxActions)
	}
	if got := r.Ignored(); got != extra {
		t.Fatalf("ignored %d, want %d", got, extra)
	}
	os.WriteFile(filepath.Join(dir, "new", "5000.json"), []byte("{}"), 0o644)
	if es, _ := r.Poll(); len(es) != 0 {
		t.Fatalf("read %d entries past the cap", len(es))
	}
}

func TestActionsPastTheCapAreRefusedWithoutWaiting(t *testing.T) {
	dir, r := newOutbox(t)
	defer func(d time.Duration) { WaitForOutcome = d }(WaitForOutcome)
	WaitForOutcome = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// An action posted but never taken, then the cap: its writer stops waiting.
	n, err := post(dir, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Outcome, 1)
	go func() { o, _ := await(ctx, dir, n); got <- o }()
	if err := r.AnswerOver(); err != nil {
		t.Fatal(err)
	}
	if o := <-got; o == nil || o.Ok() || o.N != n || o.Code != CodeBadInput {
		t.Fatalf("waiting writer got %+v, want refused", o)
	}
	o, err := Submit(ctx, dir, &Action{Kind: KindComplete})
	if err != nil || o.Ok() || o.Code != CodeBadInput {
		t.Fatalf("Submit past the cap = %+v, %v; want refused", o, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "new")); len(ents) != 1 {
		t.Fatalf("new/ holds %d entries, want only the one posted before the cap", len(ents))
	}
}
