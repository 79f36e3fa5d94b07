package box

import (
	"context"
	"fmt"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/outbox"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

// serveActions answers what is new in the outbox, as much as the pacer
// allows (nil: everything); it reports whether there was anything.
func (s *Supervision) serveActions(ctx context.Context, ob *outbox.Reader, rec *runs.Record, ev *runs.Evidence, p *pacer) bool {
	any := false
	for ctx.Err() == nil { // stopped: the rest is left unread
		if p != nil && !p.ready() {
			if !ob.Capped() && ob.Ignored() > 0 {
				p.hold() // an action waits for credit
			}
			break
		}
		n := 0
		if p != nil {
			n = ActionBatch
		}
		ents, err := ob.PollUpTo(n)
		if err != nil || len(ents) == 0 {
			break
		}
		any = true
		s.applyActions(ctx, ob, rec, ev, p, ents)
		if p == nil {
			break
		}
	}
	if !any {
		return false
	}
	if ob.Capped() {
		_ = ob.AnswerOver() // after the answers: the box's writer relies on it
	}
	_ = runs.WriteRecord(s.Spec.RunDir, rec)
	return true
}

// DrainFor bounds how long a run's end serves what its box left in the
// outbox, paced as before: the rest is left unread (refused, journaled
// once), so a box cannot stretch its run's end, and its claim, by
// posting and exiting.
const DrainFor = 30 * time.Second

// drainActions serves what the box posted before it ended, waiting for
// the pacer's credit as the box would have, for at most DrainFor of the
// pacer's clock; it gives up when ctx ends.
func (s *Supervision) drainActions(ctx context.Context, r *supervised) {
	end := r.pace.now().Add(DrainFor)
	for {
		s.serveActions(ctx, r.ob, r.rec, &r.ev, r.pace)
		if !r.pace.holding() { // all served
			return
		}
		w := r.pace.wait()
		if r.pace.now().Add(w).After(end) {
			return // the rest is left unread
		}
		t := time.NewTimer(w)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// applyActions applies ents in their order and answers each, charging
// each one's time to p.
func (s *Supervision) applyActions(ctx context.Context, ob *outbox.Reader, rec *runs.Record, ev *runs.Evidence, p *pacer, ents []outbox.Entry) {
	served := s.servedTask()
	for _, e := range ents {
		var start time.Time
		if p != nil {
			start = p.now()
		}
		o := &outbox.Outcome{Outcome: "ok"}
		kind := "invalid"
		var res tms.ActionResult
		var aerr error
		if e.Err != nil {
			// Unreadable (not a regular file, too large, not JSON, an
			// unknown kind): refused and journaled as kind "invalid".
			aerr = errs.New(errs.ErrUsage, e.Err.Error())
			if err := s.Part.RefuseAction(ctx, rec.ID, served, e.N, tms.ActInvalid, e.Err.Error()); err != nil {
				ev.Note = joinNote(ev.Note, fmt.Sprintf("journal refused action %d: %v", e.N, err))
			}
		} else {
			kind = e.Action.Kind
			ta, cerr := toTMS(e.N, e.Action)
			if kind == outbox.KindReply {
				if aerr = s.applyReply(ctx, rec.ID, e.Action); aerr != nil {
					if err := s.Part.RefuseAction(ctx, rec.ID, served, e.N, kind, aerr.Error()); err != nil {
						ev.Note = joinNote(ev.Note, fmt.Sprintf("journal refused action %d: %v", e.N, err))
					}
				}
			} else if cerr != nil {
				aerr = cerr
				if err := s.Part.RefuseAction(ctx, rec.ID, served, e.N, kind, cerr.Error()); err != nil {
					ev.Note = joinNote(ev.Note, fmt.Sprintf("journal refused action %d: %v", e.N, err))
				}
			} else {
				res, aerr = s.Part.ApplyAction(ctx, rec.ID, served, ta)
			}
		}
		o.Kind = kind
		if aerr != nil {
			o.Outcome, o.Code, o.Message = "refused", errs.Code(aerr), aerr.Error()
			if o.Code == 0 {
				o.Code = outbox.CodeFailed
			}
			for _, r := range res.Refused {
				o.Refusals = append(o.Refusals, r.Entry+": "+r.Reason)
			}
			ev.RefusedActions++
		} else {
			o.Task, o.Gate, o.Version = res.Task, res.Gate, res.Version
			switch kind {
			case outbox.KindComplete:
				ev.Report, ev.Reason, rec.Report = "complete", "", runs.Report{Status: "complete", Text: e.Action.Summary}
			case outbox.KindFail:
				ev.Report, ev.Reason, rec.Report = "fail", e.Action.Reason, runs.Report{Status: "fail", Text: e.Action.Reason}
			}
		}
		outcome := "ok"
		if !o.Ok() {
			outcome = "refused: " + o.Message
		}
		rec.Actions = append(rec.Actions, runs.ActionRecord{N: e.N, Kind: kind, Outcome: outcome, Task: o.Task, Gate: o.Gate})
		_ = ob.Answer(e, o)
		if p != nil {
			p.charge(start)
		}
	}
}

// boundTmp keeps the outbox's tmp/ within its bounds while the box runs;
// the first time it removes anything it journals a refusal naming the
// bound (once per run: a box refilling tmp/ must not flood the journal).
func (s *Supervision) boundTmp(ctx context.Context, ob *outbox.Reader, rec *runs.Record, ev *runs.Evidence, sum *outbox.TmpBound) {
	b, err := ob.BoundTmp()
	if err != nil || b.Removed == 0 {
		return
	}
	first := sum.Removed == 0
	sum.Removed += b.Removed
	sum.Bytes += b.Bytes
	ev.RefusedActions += b.Removed
	if !first {
		return
	}
	why := fmt.Sprintf("outbox tmp/ over %d MiB or %d entries (or not a file): %d entries (%d bytes) removed", outbox.MaxTmpBytes>>20, outbox.MaxTmpEntries, b.Removed, b.Bytes)
	served := s.servedTask()
	if err := s.Part.RefuseAction(ctx, rec.ID, served, 0, tms.ActInvalid, why); err != nil {
		ev.Note = joinNote(ev.Note, fmt.Sprintf("journal: %v", err))
	}
}

// noteCap records, once the run has ended, that it reached the cap of
// outbox.MaxActions entries: one journal line and the evidence's note
// saying how many were left unread, counted as refused.
func (s *Supervision) noteCap(ctx context.Context, ob *outbox.Reader, rec *runs.Record, ev *runs.Evidence) {
	if !ob.Capped() {
		return
	}
	ignored := ob.Ignored()
	why := fmt.Sprintf("over %d actions in this run: the cap was reached and %d more were ignored", outbox.MaxActions, ignored)
	served := s.servedTask()
	if err := s.Part.RefuseAction(ctx, rec.ID, served, 0, tms.ActInvalid, why); err != nil {
		why += fmt.Sprintf(" (journal: %v)", err)
	}
	ev.RefusedActions += ignored
	ev.Note = joinNote(ev.Note, why)
}

// servedTask is the id of the task the run serves, "" for an ad-hoc run:
// what its actions' journal lines name.
func (s *Supervision) servedTask() string {
	if s.Task == nil {
		return ""
	}
	return s.Task.ID
}

// toTMS turns a decoded outbox action into the TMS's form.
func toTMS(n int, a *outbox.Action) (tms.Action, error) {
	ta := tms.Action{N: n, Kind: a.Kind, At: a.At, After: a.After, Wake: a.Wake}
	switch a.Kind {
	case outbox.KindComplete:
		ta.Text = a.Summary
	case outbox.KindFail:
		ta.Text = a.Reason
	case outbox.KindFile:
		ta.Text = a.Text
	case outbox.KindPropose:
		ta.Text = a.What
	case outbox.KindSet:
		in, err := tms.DecodeSet(a.Set)
		if err != nil {
			return ta, err
		}
		v := a.Version
		in.Version = &v
		ta.Set = in
	}
	return ta, nil
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func ptr[T any](v T) *T { return &v }

func fmtDur(d time.Duration) string {
	if d <= 0 {
		return "" // no ceiling: run.json's ceiling is empty, not "off"
	}
	return config.FormatDuration(d)
}
