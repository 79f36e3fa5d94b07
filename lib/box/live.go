package box

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/agent"
	"github.com/roster-sh/roster/lib/chat"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

// LiveSession is a channel's live session (docs/channels.md): one box
// per (worker × channel), its agent started once in its streaming mode,
// fed each next message of the channel as a turn as the session claims
// its relay, each relay attested when its turn ends; it ends idle after
// Idle without a message, or at a turn's ceiling.
type LiveSession struct {
	Channel     string
	Idle        time.Duration // the channel's live
	Queue       string        // "collect" | "followup"
	TurnCeiling time.Duration // [ceilings] relay, per turn

	agent string // "pi", "claude", or "" (a plain command)
}

// liveState is a live session's progress while its box runs.
type liveState struct {
	in        *os.File     // the box's standard input (our end)
	turns     *agent.Turns // the box's output, read for turn ends
	current   []tms.Task   // the relays of the turn in flight
	turnStart time.Time
	lastEnd   time.Time // the last turn's end, or the session's start
	started   bool      // the first relay (the claimed task) was fed
	futile    time.Time // the last look for relays that claimed nothing
	tasksAt   fileStamp // tasks.json as that look found it
	closing   bool      // stdin closed: the session is ending
	verdict   string    // the last turn's attestation
}

// liveFor is the live session a dispatched relay starts, nil when its
// channel is not live.
func liveFor(spec *config.Worker, org *config.Org, t *tms.Task) *LiveSession {
	if t == nil || t.Kind != tms.KindRelay {
		return nil
	}
	ch := spec.ChannelFor(t.Channel)
	if ch == nil || ch.Live == 0 {
		return nil
	}
	return &LiveSession{Channel: t.Channel, Idle: ch.Live, Queue: ch.Queue, TurnCeiling: org.Ceilings.Relay, agent: spec.Agent}
}

// liveRecent is the conversation's last messages for a new session's
// briefing (50 messages or 32 KiB).
func liveRecent(s *Supervision) []*chat.Message {
	rec, err := chat.Open(s.Part.W, s.Live.Channel)
	if err != nil {
		return nil
	}
	msgs, _ := rec.Recent(50, 32<<10)
	return msgs
}

// liveTick moves the session on: a turn that ended is settled (its reply
// queued, its relays attested); a turn over its ceiling fails and ends
// the session; else the channel's next relays are claimed and fed; with
// none for Idle, stdin is closed and the session ends idle. It returns
// how the session ends when it does ("ceiling", "idle"), for serve.
func (s *Supervision) liveTick(ctx context.Context, r *supervised) (ended, note string) {
	l := r.live
	for {
		select {
		case t := <-l.turns.Ended():
			s.endTurn(ctx, r, t)
			continue
		default:
		}
		break
	}
	if l.closing {
		return "", ""
	}
	now := time.Now()
	if len(l.current) > 0 {
		if s.Live.TurnCeiling > 0 && now.Sub(l.turnStart) > s.Live.TurnCeiling {
			r.ev.Ceiling = true
			s.failTurn(ctx, r, "ceiling: the turn ran over [ceilings] relay ("+fmtDur(s.Live.TurnCeiling)+")")
			return "ceiling", "a turn ran over its ceiling"
		}
		return "", ""
	}
	if batch := s.claimNext(ctx, r, now); len(batch) > 0 {
		if err := s.feed(r, batch); err != nil {
			s.failTurn(ctx, r, "the agent's input is closed: "+err.Error())
			return "error", "the agent stopped reading its messages"
		}
		return "", ""
	}
	if now.Sub(l.lastEnd) >= s.Live.Idle {
		s.closeLive(r)
		return "idle", fmt.Sprintf("no message for %s", fmtDur(s.Live.Idle))
	}
	if w, err := config.ReadWorker(s.Part.Home, s.Spec.Worker); err == nil && w.Paused {
		s.closeLive(r)
		return "idle", "the worker was paused"
	}
	return "", ""
}

// claimNext claims the channel's next relays for this run: the first
// call the task the session was started for; then, of the pending
// relays of its channel, all that are claimable (queue "collect") or the
// first (queue "followup").
func (s *Supervision) claimNext(ctx context.Context, r *supervised, now time.Time) []tms.Task {
	l := r.live
	if !l.started {
		l.started = true
		return []tms.Task{*s.Task}
	}
	stamp := stampOf(s.Part.W.TasksFile())
	if stamp == l.tasksAt && now.Sub(l.futile) < 5*time.Second {
		// Nothing filed since the last look (a stat a tick); a relay
		// late for the budget is looked at again every 5 s.
		return nil
	}
	f, err := s.Part.ReadNoLock(ctx)
	if err != nil {
		return nil
	}
	var out []tms.Task
	for _, t := range f.Tasks {
		if t.Kind != tms.KindRelay || t.Channel != s.Live.Channel || t.State != tms.Pending {
			continue
		}
		if _, err := s.Part.Claim(ctx, t.ID, r.rec.ID); err != nil {
			continue // not claimable now (late: the budget), or taken
		}
		out = append(out, t)
		if s.Live.Queue == "followup" || s.Live.agent == "" {
			break // a plain command ends a turn per message line
		}
	}
	if len(out) == 0 {
		l.futile, l.tasksAt = now, stamp
	}
	return out
}

// fileStamp tells a file's versions apart without reading it.
type fileStamp struct {
	ino, size int64
	mtime     int64
}

func stampOf(path string) fileStamp {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return fileStamp{}
	}
	return fileStamp{ino: int64(st.Ino), size: st.Size, mtime: st.Mtim.Nano()}
}

// feed writes batch as the next turn.
func (s *Supervision) feed(r *supervised, batch []tms.Task) error {
	l := r.live
	var msg []byte
	if s.Live.agent == "" {
		for _, t := range batch {
			msg = append(msg, agent.PlainMessage(t.ID, t.From, t.Channel, t.Text)...)
		}
	} else {
		parts := make([]string, len(batch))
		for i := range batch {
			parts[i] = RelayFrame(&batch[i])
		}
		text := strings.Join(parts, "\n\n")
		a, err := agent.For(s.Live.agent)
		if err != nil {
			return err
		}
		if msg, err = a.Message(text); err != nil {
			return err
		}
	}
	l.current, l.turnStart = batch, time.Now()
	_, err := l.in.Write(msg)
	return err
}

// endTurn settles a finished turn: its final text queued as the reply
// (unless empty or NO_REPLY), each of its relays attested and marked
// answered in the record.
func (s *Supervision) endTurn(ctx context.Context, r *supervised, t agent.Turn) {
	l := r.live
	if len(l.current) == 0 {
		return // a turn of the agent's own (none was fed)
	}
	rec, err := chat.Open(s.Part.W, s.Live.Channel)
	text := strings.TrimSpace(t.FinalText)
	if err == nil && text != "" && text != "NO_REPLY" && t.Err == "" {
		for _, part := range splitReply(text) {
			if _, _, qerr := rec.Queue(ctx, chat.Reply{Text: part, Run: r.rec.ID, By: "run"}); qerr != nil {
				r.ev.Note = joinNote(r.ev.Note, "reply not queued: "+qerr.Error())
			}
		}
	}
	ev := runs.Evidence{Report: "complete"}
	if t.Err != "" {
		ev = runs.Evidence{Report: "fail", Reason: t.Err}
	}
	s.attestTurn(ctx, r, ev)
	l.lastEnd = time.Now()
}

// failTurn attests the turn in flight failed (why).
func (s *Supervision) failTurn(ctx context.Context, r *supervised, why string) {
	if len(r.live.current) == 0 {
		return
	}
	s.attestTurn(ctx, r, runs.Evidence{Report: "fail", Reason: why, Ceiling: r.ev.Ceiling})
}

// attestTurn attests the relays of the turn in flight with ev and marks
// them answered in the conversation record.
func (s *Supervision) attestTurn(ctx context.Context, r *supervised, ev runs.Evidence) {
	l := r.live
	for _, t := range l.current {
		v, err := s.Part.Attest(ctx, t.ID, r.rec.ID, ev)
		if err != nil {
			r.ev.Note = joinNote(r.ev.Note, "attest "+t.ID+": "+err.Error())
			continue
		}
		l.verdict = v
		r.rec.Live.Turns++
		r.rec.Live.Tasks = append(r.rec.Live.Tasks, t.ID)
		if v == tms.Completed {
			markAnswered(ctx, s.Part.W, t, r.rec.ID)
		}
	}
	l.current = nil
}

// closeLive ends the session: the mark is taken back (the next message
// starts a new session) and the agent's input closed, so it exits.
func (s *Supervision) closeLive(r *supervised) {
	l := r.live
	if l.closing {
		return
	}
	l.closing = true
	if rec, err := chat.Open(s.Part.W, s.Live.Channel); err == nil {
		_ = rec.ClearLive(r.rec.ID)
	}
	_ = l.in.Close()
}

// splitReply cuts a final text over chat.MaxReply into replies at line
// or rune boundaries (at most 4; the rest is said to be cut).
func splitReply(text string) []string {
	var out []string
	for len(text) > chat.MaxReply && len(out) < 3 {
		cut := strings.LastIndexByte(text[:chat.MaxReply], '\n')
		if cut < chat.MaxReply/2 {
			cut = chat.MaxReply
			for cut > 0 && text[cut]&0xC0 == 0x80 {
				cut--
			}
		}
		out = append(out, text[:cut])
		text = strings.TrimLeft(text[cut:], "\n")
	}
	if len(text) > chat.MaxReply {
		cut := chat.MaxReply - 64
		for cut > 0 && text[cut]&0xC0 == 0x80 {
			cut--
		}
		text = text[:cut] + "\n[roster: the rest of this answer was cut]"
	}
	return append(out, text)
}

// endLive settles the session at the run's end: relays still in a turn
// (killed mid-turn) fail; the record's attestation is the last turn's.
func (s *Supervision) endLive(ctx context.Context, rec *runs.Record, ev *runs.Evidence) {
	// the supervised state is reached through the record's run: only
	// serve's liveState knows the turn in flight
	l := s.liveNow
	if l != nil && len(l.current) > 0 {
		why := "the session ended mid-turn (" + rec.Ended + ")"
		if ev.Ceiling {
			why = "ceiling: the turn ran over [ceilings] relay"
		}
		for _, t := range l.current {
			if v, err := s.Part.Attest(ctx, t.ID, rec.ID, runs.Evidence{Report: "fail", Reason: why, Ceiling: ev.Ceiling}); err == nil {
				l.verdict = v
				rec.Live.Turns++
				rec.Live.Tasks = append(rec.Live.Tasks, t.ID)
			}
		}
		l.current = nil
	}
	if l != nil {
		if r, err := chat.Open(s.Part.W, s.Live.Channel); err == nil {
			_ = r.ClearLive(rec.ID)
		}
		rec.Attested = l.verdict
	}
	if rec.Attested == "" {
		// nothing was attested: the first relay was never fed (the box
		// did not start) or its claim went
		verdict, err := s.Part.Attest(ctx, s.Task.ID, rec.ID, *ev)
		if err != nil {
			ev.Note = joinNote(ev.Note, "attest: "+err.Error())
		}
		rec.Attested = verdict
	}
}

// markAnswered marks relay t's message answered by run in its
// conversation record (when roster-chat filed it: t.Msg).
func markAnswered(ctx context.Context, w home.Worker, t tms.Task, run string) {
	if t.Kind != tms.KindRelay || t.Msg == "" || t.Channel == "" {
		return
	}
	rec, err := chat.Open(w, t.Channel)
	if err != nil {
		return
	}
	lines, err := rec.Read(0)
	if err != nil {
		return
	}
	for _, m := range chat.Fold(lines) {
		if m.Dir == "in" && m.NetID == t.Msg {
			_, _ = rec.Append(ctx, chat.Line{Dir: "in", Of: m.Seq, Task: t.ID, Run: run, State: chat.Answered})
			return
		}
	}
}

// watchTasks signals (coalesced) each change of the worker's tasks/
// folder until ctx ends; nil when it cannot watch (the tick still looks).
func (s *Supervision) watchTasks(ctx context.Context) <-chan struct{} {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil
	}
	if err := w.Add(s.Part.W.Tasks()); err != nil {
		w.Close()
		return nil
	}
	out := make(chan struct{}, 1)
	go func() {
		defer w.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-w.Events:
				if !ok {
					return
				}
				select {
				case out <- struct{}{}:
				default:
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
			}
		}
	}()
	return out
}
