package tms

import (
	"context"

	"github.com/roster-sh/roster/lib/home"
)

// ActInvalid is the kind journaled for an action that could not be read
// at all (not JSON, too large, not a regular file, an unknown kind).
const ActInvalid = "invalid"

// RefuseAction journals an action from run's box that the supervisor
// refused before it reached the TMS's rules: one `action` line (by worker,
// the task served — "" for an ad-hoc run —, action n, outcome "refused:
// REASON", no version), written under the partition lock like every other
// action line. kind is the action's kind when it was readable ("" =
// ActInvalid); reason is cut at 512 bytes. It changes no task.
func (p *Partition) RefuseAction(ctx context.Context, run, served string, n int, kind, reason string) error {
	if !home.IsRunID(run) {
		return usage("run id %q: not of the form YYYY-MM-DD-HH-MM-SS-xxxx", run)
	}
	if kind == "" {
		kind = ActInvalid
	}
	t, err := p.begin(ctx)
	if err != nil {
		return err
	}
	log := &ActionLog{N: n, Kind: truncateText(kind, 64), Outcome: "refused: " + truncateText(reason, 512)}
	if _, err := t.emit(Line{Event: EvAction, Task: served, Run: run, By: ByWorker, Action: log}, false); err != nil {
		t.end()
		return err
	}
	return t.commit()
}
