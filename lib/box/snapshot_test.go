package box

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/snap"
	"github.com/roster-sh/roster/lib/tms"
)

// A post-run take that is killed before it can record its end (the OOM
// killer at the worker's host_memory bound kills with SIGKILL; here the
// take kills itself so) is recorded by the supervisor as the take's
// failure: run.json's snapshot says so and the worker is held
// (store-snapshots/.take-failed, tms.StoreHold), as for a take the store
// makes fail. A take that exits with an error of its own records its own.
func TestKilledTakeHoldsItsWorker(t *testing.T) {
	dir := t.TempDir()
	h := home.Home{Dir: dir}
	w := h.Worker("dobby")
	for _, d := range []string{w.Store(), w.Locks(), w.Runs()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(w.StoreLock(), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx := context.Background()

	// An ordinary failure is the take's to record: nothing is written here.
	got := snapshot(ctx, script("fails", "echo 'roster-snap: no room' >&2; exit 1"), h, w.Name, "r1")
	if got != "failed: roster-snap: no room" {
		t.Fatalf("failed take recorded as %q", got)
	}
	if f, err := snap.Failed(ctx, w); err != nil || f != nil {
		t.Fatalf("after a take that failed on its own: %+v, %v", f, err)
	}
	if hold := tms.StoreHold(ctx, w, nil); hold != "" {
		t.Fatalf("held after a take that failed on its own: %s", hold)
	}

	// Killed: recorded, and the worker held with the reason.
	got = snapshot(ctx, script("killed", "kill -KILL $$"), h, w.Name, "r2")
	if !strings.HasPrefix(got, "failed: roster-snap take was killed (killed)") || !strings.Contains(got, "host_memory") {
		t.Fatalf("killed take recorded as %q", got)
	}
	f, err := snap.Failed(ctx, w)
	if err != nil || f == nil || !strings.Contains(f.Error, "was killed") {
		t.Fatalf("failure record after a killed take: %+v, %v", f, err)
	}
	if hold := tms.StoreHold(ctx, w, nil); !strings.Contains(hold, "store cannot be snapshotted") || !strings.Contains(hold, "was killed") {
		t.Fatalf("hold after a killed take: %q", hold)
	}

	// Another signal is named as it is.
	got = snapshot(ctx, script("termed", "kill -TERM $$"), h, w.Name, "r3")
	if !strings.HasPrefix(got, "failed: roster-snap take was killed (terminated)") || strings.Contains(got, "host_memory") {
		t.Fatalf("terminated take recorded as %q", got)
	}
}
