package dispatch

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"
)

// TestDueQueue checks the queue against a plain map under random sets,
// moves and removals: due returns exactly the workers at or before now,
// next the earliest.
func TestDueQueue(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewSource(1))
	var q dueQueue
	want := map[string]time.Time{}
	for step := 0; step < 5000; step++ {
		w := fmt.Sprintf("w%d", r.Intn(200))
		at := time.Time{}
		if r.Intn(4) != 0 {
			at = base.Add(time.Duration(r.Intn(1000)) * time.Second)
		}
		q.set(w, at)
		if at.IsZero() {
			delete(want, w)
		} else {
			want[w] = at
		}
		if step%50 != 0 {
			continue
		}
		now := base.Add(time.Duration(r.Intn(1000)) * time.Second)
		got := q.due(now, nil)
		sort.Strings(got)
		var exp []string
		var earliest time.Time
		for w, at := range want {
			if !now.Before(at) {
				exp = append(exp, w)
			}
			if earliest.IsZero() || at.Before(earliest) {
				earliest = at
			}
		}
		sort.Strings(exp)
		if fmt.Sprint(got) != fmt.Sprint(exp) {
			t.Fatalf("step %d: due(%v) = %v, want %v", step, now, got, exp)
		}
		if !q.next().Equal(earliest) || q.Len() != len(want) {
			t.Fatalf("step %d: next %v (%d queued), want %v (%d)", step, q.next(), q.Len(), earliest, len(want))
		}
	}
}
