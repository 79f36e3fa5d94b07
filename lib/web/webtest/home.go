package webtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/roster-sh/roster/lib/chat"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/outbox"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

// Hostile is text a box or a chat could write, which the console must
// show as text: a script element, an image whose error handler runs
// script, and an attribute-breaking quote.
const Hostile = `<script>alert("xss-script")</script><img src=x onerror="alert('xss-img')">"'><b>bold?</b>`

// Built is what Build made, for the tests to look for.
type Built struct {
	Home      home.Home
	Worker    string // the worker with the gate, the runs and the chat
	Other     string // a second, paused worker
	HostileID string // a pending task whose text is Hostile
	GateTask  string // the needs-review task with pending gate g1
	Run       string // the run that proposed the gate: transcript, ledger, changes
	Channel   string // the conversation
}

// Build makes a home in dir: org.toml with a price, two workers (dobby,
// and kreacher paused), a hostile pending task, a template, a run that
// proposed a gate and ended (so its task needs review), its transcript,
// ledger (one refusal) and change list, and a conversation.
func Build(ctx context.Context, dir string, uid int) (*Built, error) {
	h, err := home.At(dir)
	if err != nil {
		return nil, err
	}
	if err := h.InitData(); err != nil {
		return nil, err
	}
	org := config.DefaultOrgTOML + "\n[gateway.prices.\"test-model\"]\ninput = 3.0\noutput = 15.0\n"
	if err := fsx.WriteNew(h.OrgFile(), []byte(org), 0o644); err != nil {
		return nil, err
	}
	b := &Built{Home: h, Worker: "dobby", Other: "kreacher", Channel: "desk:alice"}
	for i, n := range []string{b.Worker, b.Other} {
		if _, err := config.AddWorker(ctx, h, config.NewWorker{Name: n, Command: []string{"/bin/true"}, Heartbeat: "off", UID: uid + i}); err != nil {
			return nil, fmt.Errorf("worker add %s: %w", n, err)
		}
	}
	if err := config.SetPaused(h, b.Other, true); err != nil {
		return nil, err
	}
	p, err := tms.Open(h, b.Worker, tms.Options{})
	if err != nil {
		return nil, err
	}
	t, err := p.Add(ctx, tms.NewTask{Text: "tidy the docs " + Hostile})
	if err != nil {
		return nil, err
	}
	b.HostileID = t.ID
	if _, err := p.AddTemplate(ctx, tms.NewTemplate{ID: "nightly", Cron: "30 2 * * *", Text: "nightly sweep"}); err != nil {
		return nil, err
	}
	if err := b.gatedRun(ctx, p); err != nil {
		return nil, err
	}
	return b, b.conversation(ctx)
}

// gatedRun claims a task, writes its run as a supervisor would, proposes
// a gate from the "box" and attests the run: the task needs review.
func (b *Built) gatedRun(ctx context.Context, p *tms.Partition) error {
	t, err := p.Add(ctx, tms.NewTask{Text: "push the docs branch"})
	if err != nil {
		return err
	}
	b.GateTask = t.ID
	start := time.Now().Add(-10 * time.Minute).UTC().Truncate(time.Second)
	b.Run = home.NewRunID(start)
	if _, err := p.Claim(ctx, t.ID, b.Run); err != nil {
		return err
	}
	dir := b.Home.Worker(b.Worker).Run(b.Run)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if _, err := p.ApplyAction(ctx, b.Run, t.ID, tms.Action{N: 1, Kind: outbox.KindPropose, Text: "push branch docs-topics " + Hostile}); err != nil {
		return err
	}
	ev := runs.Evidence{Exit: 0, Report: "complete"}
	verdict, err := p.Attest(ctx, t.ID, b.Run, ev)
	if err != nil {
		return err
	}
	ended := start.Add(5 * time.Minute)
	exit, usd := 0, 0.0123
	rec := &runs.Record{Format: 1, ID: b.Run, Worker: b.Worker, Task: t.ID, Kind: tms.KindFiled, Standing: tms.Owner,
		StartedAt: start, EndedAt: &ended, Ended: "done", ExitCode: &exit, Report: runs.Report{Status: "complete", Text: "done " + Hostile},
		Attested: verdict, Evidence: &ev, Ceiling: "30m", Snapshot: "unchanged",
		Cost:    runs.Cost{WallSeconds: 300, CPUSeconds: 12, ModelCalls: 2, InputTokens: 1200, OutputTokens: 300, USD: &usd},
		Actions: []runs.ActionRecord{{N: 1, Kind: "propose", Outcome: "ok", Gate: "g1"}},
		Gateway: &runs.GatewaySummary{Requests: 3, Refused: 1, Refusals: map[string]int{runs.RefuseHostDenied: 1}}}
	if err := runs.WriteRecord(dir, rec); err != nil {
		return err
	}
	rec.Agent = &runs.AgentRecord{Name: "pi", Turns: 1}
	if err := runs.WriteRecord(dir, rec); err != nil {
		return err
	}
	if err := os.WriteFile(home.Transcript(dir), piTranscript(), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(home.StoreChanges(dir), []byte("M notes/"+Hostile+".md\n"), 0o600); err != nil {
		return err
	}
	return writeLedger(dir, start)
}

// piTranscript is a pi run's events (--mode json): the prompt, the
// model's text and a tool call, the tool's result, every one holding
// Hostile; and a line of stderr.
func piTranscript() []byte {
	msg := func(m map[string]any) string {
		b, _ := json.Marshal(map[string]any{"type": "message_end", "message": m})
		return string(b) + "\n"
	}
	text := func(s string) []map[string]any { return []map[string]any{{"type": "text", "text": s}} }
	return []byte("pi starting\n" +
		msg(map[string]any{"role": "user", "content": text("tidy the docs " + Hostile)}) +
		msg(map[string]any{"role": "assistant", "content": []map[string]any{
			{"type": "text", "text": "I will look at the notes " + Hostile},
			{"type": "toolCall", "id": "c1", "name": "read", "arguments": map[string]string{"path": "notes/" + Hostile}},
		}}) +
		msg(map[string]any{"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": text("file body " + Hostile)}) +
		Hostile + "\n")
}

func writeLedger(dir string, at time.Time) error {
	cost := 0.0123
	lines := []runs.LedgerEntry{
		{Seq: 1, At: at, Kind: "model", Provider: "test", Method: "POST", Host: "api.example", Path: "/v1/messages", Decision: "allowed",
			Status: 200, Model: "test-model", InputTokens: 1200, OutputTokens: 300, CostUSD: &cost},
		{Seq: 2, At: at.Add(time.Second), Kind: "connect", Method: "CONNECT", Host: "evil.example", Port: 443, Decision: "refused",
			Refusal: runs.RefuseHostDenied, Status: 403},
	}
	f, err := os.Create(runs.GatewayLedger(dir))
	if err != nil {
		return err
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	return f.Sync()
}

// conversation logs an inbound message and a reply, both hostile text.
func (b *Built) conversation(ctx context.Context) error {
	rec, err := chat.Open(b.Home.Worker(b.Worker), b.Channel)
	if err != nil {
		return err
	}
	_, err = rec.Append(ctx,
		chat.Line{Dir: "in", From: "alice", Verified: true, Text: "hi " + Hostile, State: chat.Received},
		chat.Line{Dir: "out", By: "run", Text: "reply " + Hostile, State: chat.Sent, Ref: "r1"})
	return err
}

// Path is a file of the built home.
func (b *Built) Path(parts ...string) string {
	return filepath.Join(append([]string{b.Home.Dir}, parts...)...)
}

// LiveRun makes an ad-hoc run of the worker whose supervisor is the
// calling process (its box.json names this process), with a transcript
// begun, and returns its id: the console takes it for live until End.
func (b *Built) LiveRun() (string, error) {
	return b.LiveRunSince(time.Now())
}

// LiveRunSince is LiveRun for a run that began at start (its id and
// record say so), as a long ad-hoc session begun days ago.
func (b *Built) LiveRunSince(start time.Time) (string, error) {
	now := start.UTC().Truncate(time.Second)
	id := home.NewRunID(now)
	dir := b.Home.Worker(b.Worker).Run(id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	info, err := runs.SelfBoxInfo(b.Worker, id, "", now)
	if err != nil {
		return "", err
	}
	if err := runs.WriteBoxInfo(dir, info); err != nil {
		return "", err
	}
	rec := &runs.Record{Format: 1, ID: id, Worker: b.Worker, Kind: "adhoc", StartedAt: now}
	if err := runs.WriteRecord(dir, rec); err != nil {
		return "", err
	}
	return id, os.WriteFile(home.Transcript(dir), []byte("live run begins\n"), 0o600)
}

// AppendTranscript appends text to a run's transcript, as its box's
// output would be.
func (b *Built) AppendTranscript(run, text string) error {
	f, err := os.OpenFile(home.Transcript(b.Home.Worker(b.Worker).Run(run)), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// End records the live run's end, as its supervisor would.
func (b *Built) End(run string) error {
	dir := b.Home.Worker(b.Worker).Run(run)
	r, err := runs.ReadRecord(dir)
	if err != nil {
		return err
	}
	at := time.Now().UTC()
	exit := 0
	r.EndedAt, r.Ended, r.ExitCode = &at, "done", &exit
	return runs.WriteRecord(dir, r)
}
