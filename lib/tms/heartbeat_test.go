package tms

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/errs"
)

// TestWriteKeepsHeartbeatInStepWithSpec: any change to a partition brings
// the heartbeat in step with the worker spec, without a dispatcher, and a
// change when it already is in step journals nothing more.
func TestWriteKeepsHeartbeatInStepWithSpec(t *testing.T) {
	h := newHome(t, "w")
	p, _ := open(t, h, "w")
	p.Spec.Heartbeat = 30 * time.Minute
	mustAdd(t, p, NewTask{Text: "one"})
	f, err := p.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hb := f.Template(HeartbeatID)
	if hb == nil || !hb.System || hb.Cron != "@every 30m" {
		t.Fatalf("after add: heartbeat = %+v, want the system template @every 30m", hb)
	}
	v := f.Version
	mustAdd(t, p, NewTask{Text: "two"})
	if f, _ = p.Read(ctx); f.Version != v+1 {
		t.Fatalf("second add: version %d, want %d (no heartbeat line when in step)", f.Version, v+1)
	}
	p.Spec.Heartbeat = 0
	mustAdd(t, p, NewTask{Text: "three"})
	if f, _ = p.Read(ctx); f.Template(HeartbeatID) != nil {
		t.Fatal("heartbeat off in the spec: the template is still there after a write")
	}
}

// TestRemoveHeartbeatIsConflictEvenBeforeItExists: `template rm W
// heartbeat` is 13 naming the spec, whether or not the partition holds it.
func TestRemoveHeartbeatIsConflictEvenBeforeItExists(t *testing.T) {
	h := newHome(t, "w")
	p, _ := open(t, h, "w")
	err := p.RemoveTemplate(ctx, HeartbeatID, "")
	if !errors.Is(err, errs.ErrConflict) || !strings.Contains(err.Error(), "workers/w.toml") {
		t.Fatalf("rm heartbeat = %v, want a conflict naming workers/w.toml", err)
	}
}
