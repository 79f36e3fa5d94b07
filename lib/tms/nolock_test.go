package tms

import (
	"errors"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
)

// The dispatcher's look at a worker (Due, FireTemplates with nothing due,
// LiveClaims) does not wait for a partition lock someone else holds: the
// file it reads is current (the journal is at its version). With the
// journal ahead (a change in flight), it waits as before, and gives up
// after its bound.
func TestDispatcherReadsDoNotWaitOnABusyPartition(t *testing.T) {
	p, clk := open(t, newHome(t, "w"), "w")
	a := mustAdd(t, p, NewTask{Text: "a"})
	if _, err := p.AddTemplate(ctx, NewTemplate{ID: "daily", Cron: "@daily", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.FireTemplates(ctx); err != nil { // its cursor initialized
		t.Fatal(err)
	}
	lk, err := fsx.LockPath(ctx, p.W.TasksLock(), false, fsx.Forever)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Unlock()
	q := p.WithLockWait(10 * time.Millisecond)
	due, err := q.Due(ctx)
	if err != nil || len(due.Claimable) != 1 || due.Claimable[0].ID != a.ID {
		t.Fatalf("due while the lock is held: %+v, %v", due, err)
	}
	if rep, err := q.FireTemplates(ctx); err != nil || len(rep.Fired) != 0 {
		t.Fatalf("fire with nothing due while the lock is held: %+v, %v", rep, err)
	}
	if n, err := q.LiveClaims(ctx); err != nil || n != 0 {
		t.Fatalf("live claims: %d, %v", n, err)
	}
	// Something due: that needs the lock, and waits for it (busy here).
	clk.Add(48 * time.Hour)
	if _, err := q.FireTemplates(ctx); !errors.Is(err, errs.ErrBusy) {
		t.Fatalf("fire with an activation due while the lock is held: %v, want busy", err)
	}
	// A journal ahead of tasks.json: the snapshot is not current.
	lk.Unlock()
	b := mustAdd(t, p, NewTask{Text: "b"})
	before := mustRead(t, p)
	c := mustAdd(t, p, NewTask{Text: "c"})
	if err := fsx.WriteFile(p.W.TasksFile(), encodeFile(before, "", t0), 0o600); err != nil {
		t.Fatal(err)
	}
	due, err = p.Due(ctx) // rolls forward under the lock
	if err != nil || len(due.Claimable) != 3 {
		t.Fatalf("due with the journal ahead: %+v, %v (want a, %s, %s)", due, err, b.ID, c.ID)
	}
}
