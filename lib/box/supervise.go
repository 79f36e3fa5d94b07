package box

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/roster-sh/roster/lib/agent"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/notify"
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
	Warnings []string      // the worker spec's load warnings, for an attached run to print

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

	// Gateway makes the run's gateway (Spec.Network "gateway"); it is
	// served on a Unix socket only this box is given, from before the box
	// starts until it has ended.
	Gateway func() (Gateway, error)
	// Output, if set, also sees everything the box writes (an agent's
	// event stream reader); it must not block.
	Output io.Writer
	// TranscriptFilter, if set, makes what each output stream goes through
	// on its way into the transcript (an agent's repeated events left out).
	TranscriptFilter func(io.Writer) io.Writer
	// Agent, for an agent worker, runs the agent as the box's command
	// (docs/agents.md); its plan is made when the box starts.
	Agent *AgentRun
	// Live, for a relay of a live channel, makes the run that channel's
	// live session (live.go).
	Live    *LiveSession
	liveNow *liveState // the session's state once its box started

	// SetUp, if set, is called once the container has been set up (its
	// processes moved into their cgroups) or has failed to start:
	// `roster-box run` ends its HostCgroup.HoldOpen there.
	SetUp func()

	// OnFailure is org.toml's [notify] on_failure (lib/notify), run by
	// finish for a run attested failed or ended by its ceiling; Home is
	// the home's folder it is told.
	OnFailure []string
	FinalOnly bool // [notify] on_failure_final_only
	Home      string

	now     func() time.Time // the pacer's clock (nil: time.Now); tests set it
	replies int              // replies this run queued (applyReply)
}

// Gateway is a run's gateway as the supervisor uses it (lib/gateway).
type Gateway interface {
	Serve(l net.Listener) error
	Close() error
	// Report puts what the gateway served into the record (cost, gateway
	// summary) and the evidence (its refusals).
	Report(rec *runs.Record, ev *runs.Evidence)
}

// Supervise is `roster-box run`, in four steps: prepare (run folder,
// box.json, records, outbox, transcript, gateway), start (the container),
// serve (actions, ceiling, idle, until the box ends) and finish (usage,
// destroy, attest, record, snapshot). ctx ending (SIGTERM: `roster-box
// kill`) kills the box; the run ends "error", note "killed". It returns the
// final record and the box's exit.
func (s *Supervision) Supervise(ctx context.Context) (*runs.Record, Exit, error) {
	r, err := s.prepare(ctx)
	if err != nil {
		return r.rec, Exit{}, err
	}
	defer r.close()
	mark(ctx, "prepared")
	b, err := s.start(ctx, r)
	if err != nil {
		return s.notStarted(ctx, r, err)
	}
	ended, note, exit := s.serve(ctx, r, b)
	mark(ctx, "box exited")
	r.stopped = ctx.Err() != nil
	s.end(context.WithoutCancel(ctx), r, b, ended, note, exit)
	return r.rec, exit, nil
}

// supervised is one run's state across the steps.
type supervised struct {
	rec     *runs.Record
	ev      runs.Evidence
	started time.Time
	info    runs.BoxInfo
	ob      *outbox.Reader
	tr      *transcript
	gw      Gateway
	gwDone  chan struct{}
	tmpOver outbox.TmpBound // what BoundTmp removed from the outbox's tmp/ so far
	pace    *pacer          // the run's share of host time for its actions
	stopped bool            // ctx ended (SIGTERM): what the box posts is no longer served
	closers []func()

	escape chan struct{} // the terminal's ~. (escapeCopy): end the box now

	live  *liveState    // a live session's turns (Supervision.Live)
	brief []byte        // the compiled briefing
	wrote chan error    // the start records, written while the box starts
	boxed chan error    // box.json, written while the rest is prepared (awaitBoxInfo)
	pumps chan struct{} // two tokens: the output pumps have ended
}

func (r *supervised) close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

// awaitBoxInfo waits for box.json to be written and returns how that went
// (any number of times).
func (r *supervised) awaitBoxInfo() error {
	err := <-r.boxed
	r.boxed <- err
	return err
}

// waitWrote waits for the start records (once; later calls return at once).
func (r *supervised) waitWrote() {
	if err := <-r.wrote; err != nil {
		r.ev.Note = joinNote(r.ev.Note, "start records: "+err.Error())
	}
	r.wrote <- nil
}

func (r *supervised) endAt(ended, note string) {
	now := time.Now()
	r.rec.EndedAt = ptr(now.UTC())
	r.rec.Ended = ended
	if note != "" {
		r.ev.Note = joinNote(r.ev.Note, note)
	}
	r.rec.Cost.WallSeconds = now.Sub(r.started).Seconds()
}

var errClaimGone = errors.New("claim gone before start")

// prepare makes everything the box needs before it starts: the run folder,
// the first record, the briefing, the outbox, the transcript, the gateway.
func (s *Supervision) prepare(ctx context.Context) (*supervised, error) {
	sp := s.Spec
	r := &supervised{started: time.Now(), ev: runs.Evidence{Report: "none"}, wrote: make(chan error, 1), pace: newPacer(s.now)}
	r.wrote <- nil
	r.rec = &runs.Record{ID: sp.Run, Worker: sp.Worker, Kind: s.Kind, Channel: sp.Channel,
		StartedAt: r.started.UTC(), Report: runs.Report{Status: "none"}, Ceiling: fmtDur(s.Ceiling), Actions: []runs.ActionRecord{}}
	if s.Live != nil {
		r.rec.Live = &runs.LiveRecord{Channel: s.Live.Channel}
	}
	taskID := ""
	if s.Task != nil {
		taskID = s.Task.ID
		r.rec.Task, r.rec.Standing = s.Task.ID, s.Task.Standing
	}
	if err := fsx.MkdirDurable(sp.RunDir, 0o755); err != nil {
		return r, fmt.Errorf("run folder: %w", err)
	}
	var err error
	// box.json stays after the run: it records who supervised it, and
	// liveness never trusts the file alone (runs.BoxInfo.Alive).
	if r.info, err = runs.SelfBoxInfo(sp.Worker, sp.Run, taskID, r.started); err != nil {
		return r, err
	}
	// The outbox is made first, unsynced: box.json's write below fsyncs
	// the run folder after it, so its entry is durable before the box
	// starts, without a folder fsync of its own on the start's path.
	if err := outbox.Make(home.Outbox(sp.RunDir)); err != nil {
		return r, err
	}
	// box.json, and the run folder's own entry (CreateRunDir leaves it to
	// this), are made durable while the rest is prepared; the container
	// starts only once they are (start's ready).
	// The two need no order between them (both are done before the box
	// starts): their fsyncs go at once.
	r.boxed = make(chan error, 1)
	go func() {
		entry := make(chan error, 1)
		go func() { entry <- fsx.SyncDir(filepath.Dir(sp.RunDir)) }()
		err := runs.WriteBoxInfo(sp.RunDir, r.info)
		if eerr := <-entry; err == nil {
			err = eerr
		}
		r.boxed <- err
	}()
	r.closers = append(r.closers, func() { r.awaitBoxInfo() })
	// The start's records are written while the box starts (the box reads
	// its briefing from the scratch copy), once box.json is durable: their
	// six fsyncs would otherwise queue on the disk with box.json's, which
	// the start waits for and only the run's end waits for these.
	md, recall := CompileBriefing(s.Briefing)
	r.brief = md
	first := *r.rec
	<-r.wrote
	go func() {
		_ = r.awaitBoxInfo() // its error is the start's
		err := runs.WriteRecord(sp.RunDir, &first)
		if err == nil {
			err = fsx.WriteFile(home.Briefing(sp.RunDir), md, 0o644)
		}
		if err == nil {
			err = fsx.WriteFile(home.Recall(sp.RunDir), recall, 0o644)
		}
		r.wrote <- err
	}()
	r.closers = append(r.closers, r.waitWrote)
	if r.ob, err = outbox.Open(home.Outbox(sp.RunDir)); err != nil {
		return r, err
	}
	r.closers = append(r.closers, func() { r.ob.Close() })
	if r.tr, err = newTranscript(home.Transcript(sp.RunDir), s.TranscriptMax); err != nil {
		return r, err
	}
	if sp.Network == "gateway" {
		if err := s.serveGateway(r); err != nil {
			return r, fmt.Errorf("gateway: %w", err)
		}
		mark(ctx, "gateway serving")
	}
	return r, nil
}

// serveGateway makes the run's gateway and serves it on a socket in the
// run's own scratch folder (Spec.GatewayDir, mounted at /run/roster in the
// box): never a folder another run of the worker sees.
func (s *Supervision) serveGateway(r *supervised) error {
	if s.Gateway == nil {
		return errors.New("network = \"gateway\" but no gateway was given")
	}
	sp := s.Spec
	sock, l, err := listenGateway(sp)
	if err != nil {
		return err
	}
	gw, err := s.Gateway()
	if err != nil {
		l.Close()
		os.Remove(sock)
		return err
	}
	r.gw, r.gwDone = gw, make(chan struct{})
	go func() { _ = gw.Serve(l); close(r.gwDone) }()
	writeKnowledgeObjects(sp, gw)
	r.closers = append(r.closers, func() {
		if sp.knowledgeDone != nil {
			<-sp.knowledgeDone // a box that never started: its objects' writing ends with the run
		}
		r.stopGateway()
		RemoveGatewayDir(sp.Run)
	})
	return nil
}

// stopGateway closes the gateway (once) and waits for it to stop serving.
func (r *supervised) stopGateway() {
	if r.gw == nil {
		return
	}
	_ = r.gw.Close()
	<-r.gwDone
	r.gw.Report(r.rec, &r.ev)
	r.gw = nil
}

// start wires the box's output and starts the container once box.json is
// durable and the claim re-checked (ready, while the container is made).
func (s *Supervision) start(ctx context.Context, r *supervised) (*Box, error) {
	sp := s.Spec
	agentErr := s.startAgent(r) // before the output is wired: it may read it
	ready := func() error {
		if err := r.awaitBoxInfo(); err != nil {
			return err
		}
		if s.Task == nil {
			return nil
		}
		ok, err := s.Part.StillClaimed(ctx, s.Task.ID, sp.Run)
		if err == nil && !ok {
			err = errClaimGone
		}
		return err
	}
	sinks := func(extra io.Writer) []io.Writer {
		w := []io.Writer{io.Writer(r.tr)}
		if s.TranscriptFilter != nil {
			w[0] = s.TranscriptFilter(r.tr) // one filter per output stream
		}
		if s.Output != nil {
			w = append(w, s.Output)
		}
		if extra != nil {
			w = append(w, extra)
		}
		return w
	}
	// The box's output: one pipe (order kept) into the transcript, or two
	// (stdout and stderr kept apart) teed to the terminal; with a terminal,
	// the box's own pty (its master side pumped once the box has started).
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdio := Stdio{Stdout: outW, Stderr: outW}
	r.pumps = make(chan struct{}, 2)
	var errR, errW *os.File
	switch {
	case s.Attached && s.Terminal != nil:
		stdio = Stdio{Terminal: true}
		stdio.Rows, stdio.Cols = winsize(s.Terminal)
		outR.Close()
		r.pumps <- struct{}{}
	case s.Attached:
		if errR, errW, err = os.Pipe(); err != nil {
			return nil, err
		}
		stdio.Stdin, stdio.Stderr = s.Stdin, errW
		go func() { pump(outR, sinks(s.Stdout)...); r.pumps <- struct{}{} }()
		go func() { pump(errR, sinks(s.Stderr)...); r.pumps <- struct{}{} }()
	default:
		var extra io.Writer
		if s.Live != nil {
			inR, inW, err := os.Pipe()
			if err != nil {
				return nil, err
			}
			stdio.Stdin = inR
			r.closers = append(r.closers, func() { inW.Close() })
			defer inR.Close() // the box has its own once started
			r.live = &liveState{in: inW, turns: agent.NewTurns(s.Live.agent), lastEnd: time.Now()}
			s.liveNow = r.live
			extra = r.live.turns
		}
		go func() { pump(outR, sinks(extra)...); r.pumps <- struct{}{} }()
		r.pumps <- struct{}{}
	}

	var b *Box
	lerr := agentErr // a missing agent: the box never starts
	if lerr == nil {
		b, lerr = LaunchAfter(ctx, sp, r.brief, stdio, ready)
	}
	if s.SetUp != nil {
		s.SetUp()
	}
	outW.Close()
	if errW != nil {
		errW.Close()
	}
	if lerr != nil {
		if stdio.Terminal {
			r.pumps <- struct{}{}
		}
		return nil, lerr
	}
	if b.Console != nil {
		r.closers = append(r.closers, func() { b.Console.Close() }, attachTerminal(s.Terminal, b.Console))
		go func() { pump(b.Console, sinks(s.Stdout)...); r.pumps <- struct{}{} }()
		r.escape = make(chan struct{}, 1)
		go escapeCopy(b.Console, s.Terminal, func() { r.escape <- struct{}{} }) // ends with the process or at the next keystroke
	} else if stdio.Terminal {
		r.pumps <- struct{}{}
	}
	return b, nil
}

// notStarted records a box that never started: canceled when its claim
// was gone, else an error (no exit status: the command never ran).
func (s *Supervision) notStarted(ctx context.Context, r *supervised, lerr error) (*runs.Record, Exit, error) {
	<-r.pumps
	<-r.pumps
	r.tr.Close()
	r.stopGateway()
	r.waitWrote()
	r.ev.Exit = -1
	if errors.Is(lerr, errClaimGone) {
		r.endAt("error", errClaimGone.Error())
		r.rec.Attested, r.rec.Evidence = tms.AttestedCanceled, &r.ev
		r.rec.Report.Status, r.rec.Snapshot = r.ev.Report, "not taken: box did not start"
		return r.rec, Exit{}, runs.WriteRecord(s.Spec.RunDir, r.rec)
	}
	r.endAt("error", "box did not start: "+lerr.Error())
	s.finish(ctx, r.rec, &r.ev, false)
	return r.rec, Exit{Code: -1}, lerr
}

// end reads what the box did once it has ended — its last actions, usage,
// output, the gateway's figures — destroys it, and finishes the run.
func (s *Supervision) end(ctx context.Context, r *supervised, b *Box, ended, note string, exit Exit) {
	r.ob.StopWaiting() // the box has ended: nothing is being written
	if r.stopped {
		// Attesting waits for the partition lock at most the grace: a
		// lock held elsewhere must not keep a stopped supervisor alive
		// (the dispatcher's reclaim settles a task left claimed).
		// Stopped (SIGTERM): what the box posted meanwhile is left unread
		// in new/, so the supervisor ends within its grace.
		s.Part = s.Part.WithLockWait(Grace)
	} else {
		s.drainActions(ctx, r) // what the box posted as it ended
	}
	if n := r.ob.Ignored(); n > 0 && !r.ob.Capped() { // past the cap: noteCap's
		why := fmt.Sprintf("stopped: %d actions left unread", n)
		if !r.stopped && ctx.Err() == nil {
			// The drain's bound: a box cannot stretch its run's end
			// (its claim, its slot of the cap) by posting and exiting.
			why = fmt.Sprintf("%d actions left unread: the box had ended and its actions' pacing would have outlasted %s", n, DrainFor)
			served := s.servedTask()
			if err := s.Part.RefuseAction(ctx, r.rec.ID, served, 0, tms.ActInvalid, why); err != nil {
				why += fmt.Sprintf(" (journal: %v)", err)
			}
			r.ev.RefusedActions += n
		}
		note = joinNote(note, why)
	}
	s.noteCap(ctx, r.ob, r.rec, &r.ev)
	cpu, mem := b.Usage()
	mark(ctx, "actions and usage read")
	// The box's destroy (its cgroups and state), the removal of its
	// scratch folder and the closing of its output (the transcript's
	// fsync among it) touch nothing of each other's: done at once. The
	// destroy's outcome is in the record; the scratch folder, whose
	// removal nothing records, goes while the record is written (and
	// before the supervisor exits).
	destroyed := make(chan error, 1)
	go func() { destroyed <- b.c.Destroy() }()
	scratched := make(chan struct{})
	go func() { RemoveScratch(s.Spec.Run); close(scratched) }()
	defer func() { <-scratched }()
	// Nothing stashed in tmp/ outlives the run (a later run reads this
	// folder through ~/self/runs/, whatever a restore did to the store).
	_, tmpErr := r.ob.EmptyTmp()
	<-r.pumps
	<-r.pumps
	// The transcript's fsync goes on while the gateway stops and the
	// agent's figures are read (nothing of each other's); the record
	// waits for both.
	transcribed := make(chan struct{})
	go func() { r.tr.Close(); close(transcribed) }()
	r.stopGateway()
	RemoveGatewayDir(s.Spec.Run) // its socket is closed
	s.recordAgent(r)
	<-transcribed
	mark(ctx, "output and gateway closed")
	if err := <-destroyed; err != nil {
		note = joinNote(note, "destroy: "+err.Error())
	}
	mark(ctx, "destroyed")
	if tmpErr != nil {
		note = joinNote(note, tmpErr.Error())
	}
	if n := r.pace.note(); n != "" {
		note = joinNote(note, n)
	}
	if r.tmpOver.Removed > 0 {
		note = joinNote(note, fmt.Sprintf("outbox tmp/ over its bound: %d entries (%d bytes) removed", r.tmpOver.Removed, r.tmpOver.Bytes))
	}

	r.rec.ExitCode, r.rec.Signal = ptr(exit.Code), exit.Signal
	r.ev.Exit, r.ev.Signal = exit.Code, exit.Signal
	r.rec.Cost.CPUSeconds, r.rec.Cost.MemoryPeakBytes = cpu, mem
	if ended == "" {
		ended = "done"
		if exit.Code != 0 || exit.Signal != "" {
			ended = "error"
		}
	}
	r.waitWrote()
	r.endAt(ended, note)
	r.rec.Cost.WallSeconds = b.Exited.Sub(b.Started).Seconds() // the box's time, not the supervisor's
	s.finish(ctx, r.rec, &r.ev, true)
	mark(ctx, "recorded")
}

// finish attests the task, writes run.json, takes the snapshot and writes
// run.json again with it; then, for a run attested failed or ended by its
// ceiling, runs the [notify] on_failure hook and records how it went.
func (s *Supervision) finish(ctx context.Context, rec *runs.Record, ev *runs.Evidence, started bool) {
	s.record(ctx, rec, ev, started)
	if len(s.OnFailure) == 0 || !notify.Wanted(rec.Attested, rec.Ended) {
		return
	}
	reason := ev.Reason
	if rec.Ended == "ceiling" {
		reason = "ceiling " + rec.Ceiling
	} else if reason == "" {
		reason = ev.Note
	}
	retry := rec.Attested == tms.Failed && s.Task != nil && s.Task.Retried < s.Task.Retries
	if retry && s.FinalOnly {
		return // on_failure_final_only: the last attempt's failure notifies
	}
	rec.Notified = notify.Run(context.WithoutCancel(ctx), s.OnFailure, notify.Event{
		Home: s.Home, Worker: s.Spec.Worker, Run: rec.ID, Task: rec.Task,
		Attested: rec.Attested, Ended: rec.Ended, Reason: reason, WillRetry: retry,
	})
	_ = runs.WriteRecord(s.Spec.RunDir, rec)
}

// record attests the task, writes run.json, takes the snapshot and writes
// run.json again with it. A box that never started changed nothing: no
// snapshot is taken (nor its store lock waited for).
func (s *Supervision) record(ctx context.Context, rec *runs.Record, ev *runs.Evidence, started bool) {
	rec.Report.Status = ev.Report
	if s.Live != nil && s.Task != nil {
		s.endLive(ctx, rec, ev)
	} else if s.Task != nil {
		verdict, err := s.Part.Attest(ctx, s.Task.ID, rec.ID, *ev)
		if err != nil {
			ev.Note = joinNote(ev.Note, "attest: "+err.Error())
		}
		rec.Attested = verdict
		if verdict == tms.AttestedFailed {
			tms.Judge(ev) // the same note ("no report") Attest journaled
		}
		if verdict == tms.Completed {
			markAnswered(ctx, s.Part.W, *s.Task, rec.ID)
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
	took := time.Now()
	rec.Snapshot = s.Snapshot(ctx)
	rec.Cost.SnapshotSeconds = time.Since(took).Seconds()
	_ = runs.WriteRecord(s.Spec.RunDir, rec)
}
