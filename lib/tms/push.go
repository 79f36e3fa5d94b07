package tms

import (
	"context"

	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
)

// ActPush is the kind of the `action` line a push through the gateway's
// git route leaves in the journal.
const ActPush = "push"

// JournalPush journals a push of run's box (task served; "" for an
// ad-hoc run) through the git route: one `action` line, by worker, kind
// push, no version (it changes no task), its refs as run.json has them
// and an outcome of "ok" (every ref landed), "gated" (one or more held
// for review, the rest landed) or "refused: KIND" (the first refusal;
// all-or-nothing, so nothing landed). A gate it opened has its own line.
func (p *Partition) JournalPush(ctx context.Context, run, task string, refs []runs.GitRef) error {
	if !home.IsRunID(run) {
		return usage("run id %q: not of the form YYYY-MM-DD-HH-MM-SS-xxxx", run)
	}
	if len(refs) > 64 {
		refs = refs[:64] // the ledger and run.json have them all
	}
	outcome, refusal := "ok", ""
	for _, r := range refs {
		if r.Refusal != "" && (refusal == "" || refusal == "atomic") {
			refusal = r.Refusal // the cause, not "atomic": refused with the rest
		}
		if r.Outcome == "gated" {
			outcome = "gated"
		}
	}
	if refusal != "" {
		outcome = "refused: " + truncateText(refusal, 64)
	}
	t, err := p.begin(ctx)
	if err != nil {
		return err
	}
	log := &ActionLog{Kind: ActPush, Outcome: outcome}
	if _, err := t.emit(Line{Event: EvAction, Task: task, Run: run, By: ByWorker, Action: log, Push: refs}, false); err != nil {
		t.end()
		return err
	}
	return t.commit()
}
