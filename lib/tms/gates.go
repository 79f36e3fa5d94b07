package tms

import (
	"context"
	"fmt"
	"strings"
)

func pendingGates(t *Task) int {
	n := 0
	for _, g := range t.Gates {
		if g.State == GatePending {
			n++
		}
	}
	return n
}

// ResolveGate records an operator's decision on one gate of a task
// (journal `gate-resolved`, by owner). On a claimed task it only records
// it; when the last pending gate of a needs-review task resolves, the task
// completes, and if any of its gates asked to wake, a continuation task
// (the original's standing) is filed whose text carries every gate's
// outcome. It returns the continuation's id, if one was filed.
func (p *Partition) ResolveGate(ctx context.Context, id, gate, decision, why string) (string, error) {
	return p.ResolveGateBy(ctx, id, gate, decision, why, ByOwner)
}

// ResolveGateBy is ResolveGate with the journal lines' `by` given: the
// web console's decisions are an operator's too, journaled
// "operator (web)" so that the journal tells where they were made
// ("": owner).
func (p *Partition) ResolveGateBy(ctx context.Context, id, gate, decision, why, by string) (string, error) {
	if by == "" {
		by = ByOwner
	}
	switch decision {
	case "approve", GateApproved:
		decision = GateApproved
	case "deny", GateDenied:
		decision = GateDenied
	default:
		return "", usage("decision %q: must be approve or deny", decision)
	}
	t, err := p.begin(ctx)
	if err != nil {
		return "", err
	}
	defer t.end()
	task := t.f.Task(id)
	if task == nil {
		return "", t.notLive(id, "resolve its gates")
	}
	gi := -1
	for i, g := range task.Gates {
		if g.ID == gate {
			gi = i
		}
	}
	if gi < 0 {
		return "", notFound("task %s has no gate %q", id, gate)
	}
	if task.Gates[gi].State != GatePending {
		return "", conflict("gate %s of task %s is already %s", gate, id, task.Gates[gi].State)
	}
	now := t.now
	task.Gates[gi].State = decision
	task.Gates[gi].Why = why
	task.Gates[gi].ResolvedAt = &now
	if _, err := t.emit(Line{Event: EvGateResolved, Task: id, Gate: gate, Decision: decision, Reason: why, By: by, Records: []Record{taskRec(*task, false)}}, true); err != nil {
		return "", err
	}
	cont := ""
	if task.State == NeedsReview && pendingGates(task) == 0 {
		if cont, err = t.completeGated(id, by); err != nil {
			return "", err
		}
	}
	return cont, t.commit()
}

// completeGated completes needs-review task id whose last gate resolved,
// filing the continuation if a gate asked to wake; it returns the
// continuation's id, if any.
func (t *txn) completeGated(id, by string) (string, error) {
	orig := cloneTask(*t.f.Task(id))
	if _, err := t.finish(id, Completed, EvCompleted, orig.LastRun, by, ReasonLastGate, nil); err != nil {
		return "", err
	}
	return t.fileContinuation(orig)
}

// ReasonLastGate is the reason of the completion a gate resolution makes.
const ReasonLastGate = "last gate resolved"

// fileContinuation files orig's continuation if one of its gates asked to
// wake; it returns the continuation's id, if any.
func (t *txn) fileContinuation(orig Task) (string, error) {
	cont := ""
	{
		wake := false
		var b strings.Builder
		fmt.Fprintf(&b, "Continue task %s now that its gates are decided.\n\nThe task was:\n%s\n\nGate outcomes:\n", orig.ID, orig.Text)
		for _, g := range orig.Gates {
			wake = wake || g.Wake
			fmt.Fprintf(&b, "- %s %q: %s", g.ID, g.What, g.State)
			if g.Why != "" {
				fmt.Fprintf(&b, " (%s)", g.Why)
			}
			b.WriteString("\n")
		}
		if wake {
			c := Task{ID: t.newTaskID(), Text: b.String(), Kind: KindContinuation, Standing: orig.Standing,
				State: Pending, CreatedAt: t.now, Channel: orig.Channel, Priority: orig.Priority, By: ByHost,
				Continues: orig.ID}
			if orig.Kind == KindRelay || orig.From != "" {
				c.From = orig.From // its text repeats an untrusted message: the briefing quotes it
				if c.From == "" {
					c.From = "someone"
				}
			}
			t.f.Tasks = append(t.f.Tasks, c)
			if _, err := t.emit(Line{Event: EvFiled, Task: c.ID, By: ByHost, From: orig.ID, Records: []Record{taskRec(c, false)}}, true); err != nil {
				return "", err
			}
			cont = c.ID
		}
	}
	return cont, nil
}

// MaxGates bounds the gates of one task.
const MaxGates = 100

// addGate appends g to task as its next gate (g1, g2, ...), pending.
func addGate(task *Task, g Gate) (Gate, error) {
	if len(task.Gates) >= MaxGates {
		return Gate{}, conflict("task %s already has %d gates", task.ID, MaxGates)
	}
	g.ID, g.State = fmt.Sprintf("g%d", len(task.Gates)+1), GatePending
	task.Gates = append(task.Gates, g)
	return g, nil
}

// OpenRepoGate adds a repo_push gate to task id, which run must hold
// claimed: a push of that run to a host repo's protected ref, waiting in
// push.Pending for review (the gateway's git route; journal
// `gate-proposed`, by host). It returns the gate's id.
func (p *Partition) OpenRepoGate(ctx context.Context, id, run, what string, wake bool, push RepoPush) (string, error) {
	if what == "" || len(what) > MaxGateText {
		return "", usage("repo gate: its text is empty or over %d bytes", MaxGateText)
	}
	t, err := p.begin(ctx)
	if err != nil {
		return "", err
	}
	defer t.end()
	task := t.f.Task(id)
	if !claimedBy(task, run) {
		return "", conflict("task %s is not claimed by run %s: a push cannot be held for review on it", id, run)
	}
	g, err := addGate(task, Gate{What: what, Wake: wake, Kind: GateRepoPush, Push: &push})
	if err != nil {
		return "", err
	}
	if _, err := t.emit(Line{Event: EvGateProposed, Task: id, Run: run, By: ByHost, Gate: g.ID, Records: []Record{taskRec(*task, false)}}, true); err != nil {
		return "", err
	}
	return g.ID, t.commit()
}

// FindGate returns gate of task id (live or finished).
func (p *Partition) FindGate(ctx context.Context, id, gate string) (*Gate, error) {
	f, err := p.Read(ctx)
	if err != nil {
		return nil, err
	}
	task := f.Task(id)
	if task == nil {
		return nil, notFound("task %s: not a live task of worker %s", id, p.Name)
	}
	for i := range task.Gates {
		if task.Gates[i].ID == gate {
			g := task.Gates[i]
			return &g, nil
		}
	}
	return nil, notFound("task %s has no gate %q", id, gate)
}
