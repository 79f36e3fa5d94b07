package dispatch

import (
	"context"
	"fmt"
	"testing"

	"github.com/roster-sh/roster/lib/tms"
)

// The chat lane (docs/channels.md): relays are claimed beside cap and the
// worker's concurrency, up to chat_cap, so a message never waits behind
// batch work; the lane has its own bound.
func TestRelaysHaveTheirOwnLane(t *testing.T) {
	f := newFixture(t, "[dispatch]\ncap = 1\nchat_cap = 2\n")
	f.worker("dobby", "concurrency = 1")
	f.add("dobby", 3)
	d := f.dispatcher(Options{})
	rep := d.Tick(context.Background())
	if len(rep.Started) != 1 {
		t.Fatalf("batch: started %d, want 1 (cap)", len(rep.Started))
	}
	// Cap and concurrency are full; relays still run, up to chat_cap.
	var relays []string
	for i := 0; i < 3; i++ {
		task, err := f.part("dobby").Add(context.Background(), tms.NewTask{Text: fmt.Sprint("msg ", i), Kind: tms.KindRelay, Channel: "team:alice"})
		if err != nil {
			t.Fatal(err)
		}
		relays = append(relays, task.ID)
	}
	rep = d.Tick(context.Background())
	got := map[string]bool{}
	for _, s := range rep.Started {
		got[s.Task] = true
	}
	left := ""
	for _, id := range relays {
		if !got[id] {
			left = id
		}
	}
	if len(rep.Started) != 2 || len(got) != 2 || left == "" {
		t.Fatalf("relays started %v, want two of %v (chat_cap 2) beside the full batch lane", rep.Started, relays)
	}
	if rep.Live != 3 || rep.Waiting != 3 {
		t.Fatalf("live %d waiting %d, want 3 and 3 (2 batch, 1 relay)", rep.Live, rep.Waiting)
	}
	// A restarted dispatcher counts the lanes apart from disk.
	if rep := f.dispatcher(Options{}).Tick(context.Background()); len(rep.Started) != 0 {
		t.Fatalf("a restart claimed %d over the lanes' bounds", len(rep.Started))
	}
	if rep := f.dispatcher(Options{ChatCap: 3}).Tick(context.Background()); len(rep.Started) != 1 || rep.Started[0].Task != left {
		t.Fatalf("chat_cap 3: started %v, want the third relay only", rep.Started)
	}
}
