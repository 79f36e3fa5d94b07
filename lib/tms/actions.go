package tms

import (
	"context"
	"errors"
	"fmt"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/outbox"
)

// Action is one action from a box's outbox, as the supervisor decoded it;
// its Kind is one of outbox's (outbox.KindComplete, ...).
type Action struct {
	N     int       `json:"n"`
	Kind  string    `json:"kind"`
	Text  string    `json:"text,omitempty"`  // file: the task; complete: the summary; fail: the reason; propose: what
	At    string    `json:"at,omitempty"`    // file: --at (RFC 3339, YYYY-MM-DD HH:MM, +DUR)
	After []string  `json:"after,omitempty"` // file: dependencies
	Wake  bool      `json:"wake,omitempty"`  // propose: file a continuation when the last gate resolves
	Set   *SetInput `json:"set,omitempty"`   // set: the request
}

// ActionResult is the outcome of one action: "ok" or "refused: ...", and
// what it made.
type ActionResult struct {
	Outcome string    `json:"outcome"`
	Task    string    `json:"task,omitempty"` // file: the new task
	Gate    string    `json:"gate,omitempty"` // propose: the new gate
	Version int64     `json:"version,omitempty"`
	Refused []Refusal `json:"refused,omitempty"`
}

// MaxGateText bounds what a proposal says.
const MaxGateText = 4096

// ApplyAction applies an action from run's box, which serves task served
// ("" for an ad-hoc run), with the worker's rules, and journals it: an
// `action` line (by worker, with the outcome, refusals included; no
// version), then, when accepted, the line of the change it made (which
// carries the version). complete and fail change nothing here: they are
// the run's report, which the supervisor passes to Attest.
//
// A refused action returns its result (Outcome "refused: ...") and an
// error of the matching kind (exit 13 for a stale or refused set, 2 for
// bad input, 12 for an unknown dependency...), for the in-box command's
// exit status. Other errors mean the partition could not be written.
//
// A file action changes only what Add changes, and is made as Add makes
// it: the tasks it does not touch kept as their bytes (sealed.go), so a
// box filing task after task costs the host a copy of tasks.json each,
// not a decode and an encode of every task in it; a dependency that is
// not live is found in the history index, read before the lock.
func (p *Partition) ApplyAction(ctx context.Context, run, served string, a Action) (ActionResult, error) {
	var res ActionResult
	var aerr error
	err := p.withHistory(func(h *history) error {
		var err error
		res, aerr, err = p.applyAction(ctx, run, served, a, h)
		return err
	})
	if err != nil {
		return res, err
	}
	return res, aerr
}

// applyAction is ApplyAction's change, under the lock; h is the history,
// or nil until a dependency needs it (then errNeedHistory, nothing
// written). err is a failure to change the partition, aerr the action's
// refusal, journaled.
func (p *Partition) applyAction(ctx context.Context, run, served string, a Action, h *history) (res ActionResult, aerr, err error) {
	t, err := p.beginRaw(ctx, a.Kind == outbox.KindFile)
	if err != nil {
		return ActionResult{}, nil, err
	}
	defer t.end()
	if err := t.useHistory(h); err != nil {
		return ActionResult{}, nil, err
	}
	res, change, aerr := t.planAction(run, served, a)
	if errors.Is(aerr, errNeedHistory) {
		return res, nil, aerr
	}
	log := &ActionLog{N: a.N, Kind: a.Kind, Outcome: "ok"}
	if aerr != nil {
		res.Outcome = "refused: " + aerr.Error()
		var re *RefusedError
		if errors.As(aerr, &re) {
			res.Refused = re.Refusals
			log.Refused = re.Refusals
		}
		log.Outcome = res.Outcome
	} else {
		res.Outcome = "ok"
	}
	if _, err := t.emit(Line{Event: EvAction, Task: served, Run: run, By: ByWorker, Action: log, Reason: actionReason(a)}, false); err != nil {
		return res, nil, err
	}
	for _, l := range change {
		l2, err := t.emit(l, true)
		if err != nil {
			return res, nil, err
		}
		res.Version = l2.Version
	}
	return res, aerr, t.commit()
}

func actionReason(a Action) string {
	if a.Kind == outbox.KindFail {
		return truncateText(a.Text, 512)
	}
	return ""
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// planAction applies the action to t.f and returns the change lines to
// journal (after the action line); t.seq/t.ver are not advanced.
func (t *txn) planAction(run, served string, a Action) (ActionResult, []Line, error) {
	var res ActionResult
	if !home.IsRunID(run) {
		return res, nil, usage("run id %q: not of the form YYYY-MM-DD-HH-MM-SS-xxxx", run)
	}
	var task *Task // a copy for a file action (its tasks kept encoded): only read
	if served != "" {
		if task = t.liveTask(served); task != nil && !claimedBy(task, run) {
			task = nil
		}
	}
	switch a.Kind {
	case outbox.KindComplete, outbox.KindFail:
		return res, nil, nil
	case outbox.KindFile:
		if err := checkText(a.Text); err != nil {
			return res, nil, err
		}
		if err := t.roomForTask(a.Text); err != nil {
			return res, nil, err
		}
		standing := Proactive
		if task != nil && task.By == ByOwner && task.Kind == KindFiled && task.Standing == Owner {
			standing = Owner
		}
		nt := Task{Text: a.Text, Kind: KindFiled, Standing: standing, State: Pending, CreatedAt: t.now,
			By: ByWorker, FiledBy: run}
		if task != nil {
			nt.Channel = task.Channel
		}
		if a.At != "" {
			at, err := ParseAt(a.At, t.now, nil)
			if err != nil {
				return res, nil, err
			}
			nt.ScheduledAt = &at
		}
		if err := t.resolveDeps(&nt, a.After); err != nil {
			return res, nil, err
		}
		nt.ID = t.newTaskID()
		t.addTask(nt)
		res.Task = nt.ID
		return res, []Line{{Event: EvFiled, Task: nt.ID, Run: run, By: ByWorker, Records: []Record{taskRec(nt, false)}}}, nil
	case outbox.KindSet:
		if a.Set == nil {
			return res, nil, usage("set: no request")
		}
		// planSet checks the version against the file; emit happens later.
		r, lines, err := t.planSet(a.Set, ByWorker)
		if err != nil {
			return res, nil, err
		}
		for i := range lines {
			lines[i].Run = run
		}
		res.Version = r.Version
		return res, lines, nil
	case outbox.KindPropose:
		if task == nil {
			return res, nil, conflict("propose: the run serves no claimed task")
		}
		if a.Text == "" {
			return res, nil, usage("propose: say what needs a decision")
		}
		if len(a.Text) > MaxGateText {
			return res, nil, usage("propose: the proposal is %d bytes, more than %d", len(a.Text), MaxGateText)
		}
		g, err := addGate(task, Gate{What: a.Text, Wake: a.Wake})
		if err != nil {
			return res, nil, fmt.Errorf("propose: %w", err)
		}
		res.Gate = g.ID
		return res, []Line{{Event: EvGateProposed, Task: task.ID, Run: run, By: ByWorker, Gate: g.ID,
			Records: []Record{taskRec(*task, false)}}}, nil
	}
	return res, nil, errs.New(errs.ErrUsage, fmt.Sprintf("unknown action kind %q", a.Kind))
}
