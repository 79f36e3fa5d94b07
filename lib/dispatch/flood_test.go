package dispatch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/outbox"
	"github.com/roster-sh/roster/lib/tms"
)

// TestOnlyTasksJSONMarksAPartitionChanged: of the events in a worker's
// tasks/ folder, only tasks.json's (its rename into place ends every
// change) makes the worker be looked at again; the temporary files a
// change writes, the journal's appends, the history index and the locks
// do not, and do not even wake the loop. Its spec's change makes it read
// whole again.
func TestOnlyTasksJSONMarksAPartitionChanged(t *testing.T) {
	f := newFixture(t, "")
	f.worker("dobby", "")
	d := f.dispatcher(Options{})
	w := f.h.Worker("dobby")
	for _, p := range []string{
		filepath.Join(w.Tasks(), ".tasks.json3360117207"),
		w.Journal(), w.TasksIndex(), w.TasksLock(), w.TasksIndexLock(),
		filepath.Join(w.Tasks(), ".index.jsonl123"),
	} {
		if d.changed(p) || len(d.dirty) != 0 || d.allDirty {
			t.Fatalf("an event for %s woke the loop or marked %v (all: %v)", p, d.dirty, d.allDirty)
		}
	}
	for _, p := range []string{w.TasksFile(), w.Tasks(), w.Dir} {
		if !d.changed(p) || !d.dirty["dobby"] || d.respec["dobby"] || d.allDirty {
			t.Fatalf("an event for %s marked %v, respec %v (all: %v)", p, d.dirty, d.respec, d.allDirty)
		}
		clear(d.dirty)
	}
	if !d.changed(f.h.SpecFile("dobby")) || !d.dirty["dobby"] || !d.respec["dobby"] {
		t.Fatalf("a spec's change marked %v, respec %v", d.dirty, d.respec)
	}
}

// TestFloodOfFilingsAtConcurrencyIsNotReadAgain: a worker whose box files
// task after task while it is at its concurrency is not read again for
// them, nor when the times they were filed for come (its tasks.json, made
// unreadable here, is not even opened: nothing is logged about it), and
// another worker's task is claimed meanwhile.
// The moment something it could claim for changes, it is read again: its
// spec raising its concurrency, its claim ending.
func TestFloodOfFilingsAtConcurrencyIsNotReadAgain(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "[dispatch]\ncap = 5\nzone = \"UTC\"\n")
	f.clock.t = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC) // no day turns below
	f.worker("flood", "")
	f.worker("quiet", "")
	first := f.add("flood", 1)[0]
	d := f.dispatcher(Options{})
	d.watching = true // as with change notifications: a worker is read when it changed
	w := f.h.Worker("flood")
	d.Tick(ctx)
	if f.claimed("flood") != 1 {
		t.Fatalf("flood's task not claimed:\n%s", f.log)
	}
	d.changed(w.TasksFile()) // the claim's own change: read again
	d.Tick(ctx)

	run := ""
	for _, l := range readJournal(t, w) {
		if l.Event == tms.EvClaimed && l.Task == first {
			run = l.Run
		}
	}
	p := f.part("flood")
	for i := 1; i <= 3; i++ {
		if _, err := p.ApplyAction(ctx, run, first, tms.Action{N: i, Kind: outbox.KindFile, Text: "more work"}); err != nil {
			t.Fatal(err)
		}
		// and one for each of the next seconds: their times coming do
		// not have it read either
		at := fmt.Sprintf("+%ds", i)
		if _, err := p.ApplyAction(ctx, run, first, tms.Action{N: 10 + i, Kind: outbox.KindFile, Text: "later " + at, At: at}); err != nil {
			t.Fatal(err)
		}
	}
	d.changed(w.TasksFile())
	d.Tick(ctx)
	d.lastFull = time.Time{} // a full pass reads it whole, and sees the tasks' times
	d.Tick(ctx)
	good, err := os.ReadFile(w.TasksFile())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.TasksFile(), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.changed(w.TasksFile())
	d.Tick(ctx)
	f.add("quiet", 1)
	d.changed(f.h.Worker("quiet").TasksFile())
	for i := 0; i < 4; i++ {
		f.clock.add(time.Second)
		d.Tick(ctx)
	}
	if f.claimed("quiet") != 1 {
		t.Fatalf("quiet's task not claimed while flood filed:\n%s", f.log)
	}
	if n := f.log.count("skipping until it can be read"); n != 0 {
		t.Fatalf("flood's tasks.json was read again for its filings:\n%s", f.log)
	}
	if err := os.WriteFile(w.TasksFile(), good, 0o600); err != nil {
		t.Fatal(err)
	}
	if f.claimed("flood") != 1 {
		t.Fatalf("flood has %d claims at concurrency 1", f.claimed("flood"))
	}

	// Its spec raises its concurrency: read again, one more claimed.
	spec, err := os.ReadFile(f.h.SpecFile("flood"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.h.SpecFile("flood"), append(spec, "concurrency = 2\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	d.changed(f.h.SpecFile("flood"))
	d.Tick(ctx)
	if n := f.claimed("flood"); n != 2 {
		t.Fatalf("after its concurrency was raised to 2, flood has %d claims:\n%s", n, f.log)
	}
	d.changed(w.TasksFile()) // the claim's own change
	d.Tick(ctx)

	// Its first claim ends: read again, the next task claimed.
	if _, err := p.Cancel(ctx, first, "enough", tms.ByOwner); err != nil {
		t.Fatal(err)
	}
	d.changed(w.TasksFile())
	d.Tick(ctx)
	if n := f.claimed("flood"); n != 2 {
		t.Fatalf("after a claim ended, flood has %d claims, want 2 again:\n%s", n, f.log)
	}
}
