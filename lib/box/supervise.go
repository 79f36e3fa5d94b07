package box

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/outbox"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

// PollEvery is how often the supervisor looks into the outbox and checks
// the ceiling and idle limits.
const PollEvery = 100 * time.Millisecond

// Supervision is one run to supervise: the box, its task and its limits.
type Supervision struct {
	Spec     *Spec
	Part     *tms.Partition // the worker's partition: actions and attestation
	Task     *tms.Task      // nil for an ad-hoc run
	Kind     string         // the task's kind, or "adhoc"
	Briefing BriefingInput
	Ceiling  time.Duration
	Idle     time.Duration // 0 = off

	// Attached runs the box in the foreground: stdin passed through,
	// output copied to Stdout/Stderr as well as the transcript. With
	// Terminal (the user's terminal, when stdin is one) the box gets a pty
	// of its own instead, Terminal is put in raw mode for the run, and
	// the box's output goes to Stdout and the transcript.
	Attached       bool
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Terminal       *os.File

	TranscriptMax int64
	// Snapshot runs after the run and returns what run.json records
	// (an id, "unchanged", "store busy", ...); nil: "snapshots unavailable".
	Snapshot func(ctx context.Context) string
}

// Supervise is `roster-box run`: it writes box.json and the run record,
// re-checks the claim, compiles the briefing, runs the box to its end
// (serving actions, enforcing the ceiling and idle), reads its usage,
// destroys it, records and attests the run, and takes the snapshot. ctx
// ending (SIGTERM: `roster-box kill`) kills the box; the run ends "error",
// note "killed". It returns the final record and the box's exit.
func (s *Supervision) Supervise(ctx context.Context) (*runs.Record, Exit, error) {
	sp := s.Spec
	started := time.Now()
	rec := &runs.Record{ID: sp.Run, Worker: sp.Worker, Kind: s.Kind, Channel: sp.Channel,
		StartedAt: started.UTC(), Report: runs.Report{Status: "none"}, Ceiling: fmtDur(s.Ceiling), Actions: []runs.ActionRecord{}}
	taskID := ""
	if s.Task != nil {
		taskID = s.Task.ID
		rec.Task, rec.Standing = s.Task.ID, s.Task.Standing
	}
	if err := fsx.MkdirDurable(sp.RunDir, 0o755); err != nil {
		return nil, Exit{}, fmt.Errorf("run folder: %w", err)
	}
	info, err := runs.SelfBoxInfo(sp.Worker, sp.Run, taskID, started)
	if err != nil {
		return nil, Exit{}, err
	}
	// box.json stays after the run: it records who supervised it, and
	// liveness never trusts the file alone (runs.BoxInfo.Alive).
	ev := runs.Evidence{Report: "none"}
	end := func(ended, note string) {
		now := time.Now()
		rec.EndedAt = ptr(now.UTC())
		rec.Ended = ended
		if note != "" {
			ev.Note = joinNote(ev.Note, note)
		}
		rec.Cost.WallSeconds = now.Sub(started).Seconds()
	}

	// box.json is made durable, then the claim re-checked, while the box
	// is prepared; the container starts only after both (ready). A claim
	// gone by then is recorded canceled and nothing starts.
	errClaimGone := errors.New("claim gone before start")
	ready := func() error {
		if err := runs.WriteBoxInfo(sp.RunDir, info); err != nil {
			return err
		}
		if s.Task == nil {
			return nil
		}
		ok, err := s.Part.StillClaimed(ctx, taskID, sp.Run)
		if err == nil && !ok {
			err = errClaimGone
		}
		return err
	}

	// The start's records are written while the box starts (the box reads
	// its briefing from the scratch copy).
	md, recall := CompileBriefing(s.Briefing)
	first := *rec
	wrote := make(chan error, 1)
	go func() {
		err := runs.WriteRecord(sp.RunDir, &first)
		if err == nil {
			err = fsx.WriteFile(home.Briefing(sp.RunDir), md, 0o644)
		}
		if err == nil {
			err = fsx.WriteFile(home.Recall(sp.RunDir), recall, 0o644)
		}
		wrote <- err
	}()
	waitWrote := func() {
		if err := <-wrote; err != nil {
			ev.Note = joinNote(ev.Note, "start records: "+err.Error())
		}
		wrote <- nil
	}
	defer waitWrote()
	if err := outbox.Make(home.Outbox(sp.RunDir)); err != nil {
		return rec, Exit{}, err
	}
	ob, err := outbox.Open(home.Outbox(sp.RunDir))
	if err != nil {
		return rec, Exit{}, err
	}
	defer ob.Close()
	tr, err := newTranscript(home.Transcript(sp.RunDir), s.TranscriptMax)
	if err != nil {
		return rec, Exit{}, err
	}

	// The box's output: one pipe (order kept) into the transcript, or two
	// (stdout and stderr kept apart) teed to the terminal; with a terminal,
	// the box's own pty (its master side pumped once the box has started).
	outR, outW, err := os.Pipe()
	if err != nil {
		return rec, Exit{}, err
	}
	stdio := Stdio{Stdout: outW, Stderr: outW}
	pumps := make(chan struct{}, 2)
	var errR, errW *os.File
	switch {
	case s.Attached && s.Terminal != nil:
		stdio = Stdio{Terminal: true}
		stdio.Rows, stdio.Cols = winsize(s.Terminal)
		outR.Close()
		pumps <- struct{}{}
	case s.Attached:
		if errR, errW, err = os.Pipe(); err != nil {
			return rec, Exit{}, err
		}
		stdio.Stdin, stdio.Stderr = s.Stdin, errW
		go func() { pump(outR, tr, s.Stdout); pumps <- struct{}{} }()
		go func() { pump(errR, tr, s.Stderr); pumps <- struct{}{} }()
	default:
		go func() { pump(outR, tr); pumps <- struct{}{} }()
		pumps <- struct{}{}
	}

	b, lerr := LaunchAfter(ctx, sp, md, stdio, ready)
	outW.Close()
	if errW != nil {
		errW.Close()
	}
	if lerr == nil && b.Console != nil {
		defer b.Console.Close()
		defer attachTerminal(s.Terminal, b.Console)()
		go func() { pump(b.Console, tr, s.Stdout); pumps <- struct{}{} }()
		go func() { _, _ = io.Copy(b.Console, s.Terminal) }() // ends with the process or at the next keystroke
	} else if stdio.Terminal {
		pumps <- struct{}{}
	}
	if lerr != nil {
		<-pumps
		<-pumps
		tr.Close()
		waitWrote()
		ev.Exit = -1 // no exit status: the command never ran
		if errors.Is(lerr, errClaimGone) {
			end("error", errClaimGone.Error())
			rec.Attested, rec.Evidence = tms.AttestedCanceled, &ev
			rec.Report.Status, rec.Snapshot = ev.Report, "not taken: box did not start"
			return rec, Exit{}, runs.WriteRecord(sp.RunDir, rec)
		}
		end("error", "box did not start: "+lerr.Error())
		s.finish(ctx, rec, &ev, false)
		return rec, Exit{Code: -1}, lerr
	}

	done := make(chan struct{})
	var exit Exit
	var werr error
	go func() { exit, werr = b.Wait(); close(done) }()

	ended, note := "", ""
	deadline := time.Time{}
	if s.Ceiling > 0 {
		deadline = b.Started.Add(s.Ceiling)
	}
	lastAction := time.Now()
	var tmpOver outbox.TmpBound // what BoundTmp removed so far
	killing := false
	kill := func(why, n string) {
		if killing {
			return
		}
		killing, ended, note = true, why, n
		go b.Kill(Grace, done)
	}
	tick := time.NewTicker(PollEvery)
	defer tick.Stop()
	ctxDone := ctx.Done()
loop:
	for {
		select {
		case <-done:
			break loop
		case <-ctxDone:
			ctxDone = nil // once: a closed channel would spin this loop
			kill("error", "killed")
		case <-tick.C:
		}
		if s.serveActions(ctx, ob, rec, &ev) {
			lastAction = time.Now()
		}
		s.boundTmp(ctx, ob, rec, &ev, &tmpOver)
		now := time.Now()
		if !deadline.IsZero() && now.After(deadline) {
			ev.Ceiling = true
			kill("ceiling", "")
		}
		if s.Idle > 0 && now.Sub(tr.lastOutput()) > s.Idle && now.Sub(lastAction) > s.Idle {
			kill("idle", fmt.Sprintf("no output and no action for %s", s.Idle))
		}
	}
	ob.StopWaiting()                                         // the box has ended: nothing is being written
	s.serveActions(context.WithoutCancel(ctx), ob, rec, &ev) // what the box posted as it ended
	s.noteCap(context.WithoutCancel(ctx), ob, rec, &ev)
	cpu, mem := b.Usage()
	if err := b.Destroy(); err != nil {
		note = joinNote(note, "destroy: "+err.Error())
	}
	// Nothing stashed in tmp/ outlives the run (a later run reads this
	// folder through ~/self/runs/, whatever a restore did to the store).
	if _, err := ob.EmptyTmp(); err != nil {
		note = joinNote(note, err.Error())
	}
	if tmpOver.Removed > 0 {
		note = joinNote(note, fmt.Sprintf("outbox tmp/ over its bound: %d entries (%d bytes) removed", tmpOver.Removed, tmpOver.Bytes))
	}
	<-pumps
	<-pumps
	tr.Close()
	if werr != nil && exit.Code < 0 {
		note = joinNote(note, "wait: "+werr.Error())
	}

	rec.ExitCode, rec.Signal = ptr(exit.Code), exit.Signal
	ev.Exit, ev.Signal = exit.Code, exit.Signal
	rec.Cost.CPUSeconds, rec.Cost.MemoryPeakBytes = cpu, mem
	if ended == "" {
		ended = "done"
		if exit.Code != 0 || exit.Signal != "" {
			ended = "error"
		}
	}
	waitWrote()
	end(ended, note)
	s.finish(context.WithoutCancel(ctx), rec, &ev, true)
	return rec, exit, nil
}

// finish attests the task, writes run.json, takes the snapshot and writes
// run.json again with it. A box that never started changed nothing: no
// snapshot is taken (nor its store lock waited for).
func (s *Supervision) finish(ctx context.Context, rec *runs.Record, ev *runs.Evidence, started bool) {
	rec.Report.Status = ev.Report
	if s.Task != nil {
		verdict, err := s.Part.Attest(ctx, s.Task.ID, rec.ID, *ev)
		if err != nil {
			ev.Note = joinNote(ev.Note, "attest: "+err.Error())
		}
		rec.Attested = verdict
		if verdict == tms.AttestedFailed {
			tms.Judge(ev) // the same note ("no report") Attest journaled
		}
	}
	rec.Evidence = ev
	if !started {
		rec.Snapshot = "not taken: box did not start"
		_ = runs.WriteRecord(s.Spec.RunDir, rec)
		return
	}
	if s.Snapshot == nil {
		rec.Snapshot = "snapshots unavailable"
		_ = runs.WriteRecord(s.Spec.RunDir, rec)
		return
	}
	if err := runs.WriteRecord(s.Spec.RunDir, rec); err != nil {
		return
	}
	rec.Snapshot = s.Snapshot(ctx)
	_ = runs.WriteRecord(s.Spec.RunDir, rec)
}

// serveActions answers everything new in the outbox; it reports whether
// there was anything.
func (s *Supervision) serveActions(ctx context.Context, ob *outbox.Reader, rec *runs.Record, ev *runs.Evidence) bool {
	ents, err := ob.Poll()
	if err != nil || len(ents) == 0 {
		return false
	}
	served := ""
	if s.Task != nil {
		served = s.Task.ID
	}
	for _, e := range ents {
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
			if cerr != nil {
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
	}
	if ob.Capped() {
		_ = ob.AnswerOver() // after the answers above: the box's writer relies on it
	}
	_ = runs.WriteRecord(s.Spec.RunDir, rec)
	return true
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
	served := ""
	if s.Task != nil {
		served = s.Task.ID
	}
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
	served := ""
	if s.Task != nil {
		served = s.Task.ID
	}
	if err := s.Part.RefuseAction(ctx, rec.ID, served, 0, tms.ActInvalid, why); err != nil {
		why += fmt.Sprintf(" (journal: %v)", err)
	}
	ev.RefusedActions += ignored
	ev.Note = joinNote(ev.Note, why)
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
		return ""
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
