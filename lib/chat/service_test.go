package chat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

// memNet is an in-process network for the service's own logic (the real
// adapters are tested against real servers in their packages): it offers
// messages one at a time and records what the service acknowledged and
// sent.
type memNet struct {
	in      chan Inbound
	mu      sync.Mutex
	acked   []string
	sent    []string
	failing bool
}

func (n *memNet) Run(ctx context.Context, deliver Deliver) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case m := <-n.in:
			if err := deliver(ctx, m); err == nil {
				n.mu.Lock()
				n.acked = append(n.acked, m.NetID)
				n.mu.Unlock()
			}
		}
	}
}

func (n *memNet) Send(ctx context.Context, chat, text string) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.failing {
		return "", errors.New("not connected")
	}
	n.sent = append(n.sent, chat+": "+text)
	return fmt.Sprintf("out-%d", len(n.sent)), nil
}

func (n *memNet) Nick() string { return "dobby" }

const dobbySpec = `heartbeat = "off"
uid = 20001
command = ["/bin/true"]
[[channel]]
account = "team"
chats = ["*", "#ops"]
owners = ["alice@example.org"]
allow = ["*@example.org"]
`

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestServiceLogsThenFilesOnceAndBounds(t *testing.T) {
	h := newHome(t, map[string]string{"dobby": dobbySpec})
	n := &memNet{in: make(chan Inbound)}
	s := &Service{Home: h, Adapters: map[string]Adapter{"team": n}}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(cctx) }()
	defer func() { cancel(); <-done }()

	send := func(m Inbound) { n.in <- m }
	send(Inbound{Chat: "alice@example.org", From: "alice@example.org", Verified: true, Text: "hello", NetID: "m1"})
	send(Inbound{Chat: "alice@example.org", From: "alice@example.org", Verified: true, Text: "hello", NetID: "m1"}) // redelivered
	for i := 0; i < 20; i++ {
		send(Inbound{Chat: "bob@example.org", From: "bob@example.org", Verified: true, Text: fmt.Sprint("flood ", i), NetID: fmt.Sprint("b", i)})
	}
	rec, _ := Open(h.Worker("dobby"), "team:alice@example.org")
	eventually(t, "alice's message filed", func() bool {
		lines, _ := rec.Read(0)
		m := Fold(lines)
		return len(m) == 1 && m[0].State == Filed
	})
	lines, _ := rec.Read(0)
	if len(lines) != 2 {
		t.Fatalf("a redelivered message must be logged once: %+v", lines)
	}
	p, _ := tms.Open(h, "dobby", tms.Options{})
	eventually(t, "bob's relays bounded", func() bool {
		f, _ := p.ReadNoLock(ctx)
		return countRelays(f, "team:bob@example.org") == MaxPendingRelays
	})
	f, _ := p.ReadNoLock(ctx)
	for _, tk := range f.Tasks {
		if tk.Channel == "team:alice@example.org" && tk.Standing != tms.Owner {
			t.Fatalf("a verified owner's DM must have owner standing: %+v", tk)
		}
		if tk.Channel == "team:bob@example.org" && tk.Standing != tms.Proactive {
			t.Fatalf("bob is not an owner: %+v", tk)
		}
	}
	bob, _ := Open(h.Worker("dobby"), "team:bob@example.org")
	bl, _ := bob.Read(0)
	if got := len(Fold(bl)); got != 20 {
		t.Fatalf("every flood message must be logged: %d", got)
	}
	n.mu.Lock()
	acked := len(n.acked)
	n.mu.Unlock()
	if acked != 22 {
		t.Fatalf("acked %d of 22", acked)
	}
	// Claiming some lets the rest be filed.
	for _, tk := range f.Tasks {
		if tk.Channel == "team:bob@example.org" {
			if _, err := p.Claim(ctx, tk.ID, home.NewRunID(time.Now())); err != nil {
				t.Fatal(err)
			}
		}
	}
	eventually(t, "the held messages filed", func() bool {
		f, _ := p.ReadNoLock(ctx)
		return countRelays(f, "team:bob@example.org") == MaxPendingRelays
	})
}

func countRelays(f *tms.File, channel string) int {
	n := 0
	for _, tk := range f.Tasks {
		if tk.Channel == channel && tk.State == tms.Pending {
			n++
		}
	}
	return n
}

func TestServiceStrangerGetsOnePairingCode(t *testing.T) {
	h := newHome(t, map[string]string{"dobby": dobbySpec})
	n := &memNet{in: make(chan Inbound)}
	s := &Service{Home: h, Adapters: map[string]Adapter{"team": n}}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(cctx) }()
	defer func() { cancel(); <-done }()
	n.in <- Inbound{Chat: "eve@evil.test", From: "eve@evil.test", Verified: true, Text: "let me in", NetID: "e1"}
	n.in <- Inbound{Chat: "eve@evil.test", From: "eve@evil.test", Verified: true, Text: "again", NetID: "e2"}
	eventually(t, "a pairing code sent", func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		return len(n.sent) == 1
	})
	all, _ := Pairings(h)
	if len(all) != 1 {
		t.Fatalf("pairings: %+v", all)
	}
	p, _ := tms.Open(h, "dobby", tms.Options{})
	f, _ := p.ReadNoLock(ctx)
	if len(f.Tasks) != 0 {
		t.Fatalf("a stranger's message must file nothing: %+v", f.Tasks)
	}
	rec, _ := Open(h.Worker("dobby"), "team:eve@evil.test")
	lines, _ := rec.Read(0)
	for _, l := range lines {
		if l.Dir == "in" && l.Text != "" {
			t.Fatalf("a dropped message's text must not be kept: %+v", l)
		}
	}
	if _, err := Approve(ctx, h, all[0].Code); err != nil {
		t.Fatal(err)
	}
	n.in <- Inbound{Chat: "eve@evil.test", From: "eve@evil.test", Verified: true, Text: "thanks", NetID: "e3"}
	eventually(t, "eve's message filed after approval", func() bool {
		f, _ := p.ReadNoLock(ctx)
		return len(f.Tasks) == 1 && f.Tasks[0].Standing == tms.Proactive
	})
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.sent) != 1 {
		t.Fatalf("one pairing code a day: %v", n.sent)
	}
}

func TestServiceRecoversUnfiledAndResends(t *testing.T) {
	h := newHome(t, map[string]string{"dobby": dobbySpec})
	rec, _ := Open(h.Worker("dobby"), "team:alice@example.org")
	// A crash after the log, before the file: received, never filed.
	rec.Append(ctx, Line{Dir: "in", From: "alice@example.org", Verified: true, Standing: tms.Owner, Text: "hello", NetID: "m1", State: Received})
	// And one between queue and send: marked sending.
	rp, _, _ := rec.Queue(ctx, Reply{Text: "answer", By: "run"})
	rec.Attempt(&rp)
	// And one queued, never tried.
	rec.Queue(ctx, Reply{Text: "second", By: "run"})

	n := &memNet{in: make(chan Inbound)}
	s := &Service{Home: h, Adapters: map[string]Adapter{"team": n}}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(cctx) }()
	defer func() { cancel(); <-done }()
	eventually(t, "both replies delivered", func() bool {
		pend, _ := rec.Pending()
		return len(pend) == 0
	})
	eventually(t, "the message filed", func() bool {
		lines, _ := rec.Read(0)
		return Fold(lines)[0].State == Filed
	})
	lines, _ := rec.Read(0)
	states := map[string]string{}
	for _, m := range Fold(lines) {
		if m.Dir == "out" {
			states[m.Text] = m.State
		}
	}
	if states["answer"] != Resent || states["second"] != Sent {
		t.Fatalf("states: %v", states)
	}
	// A redelivery of m1 after the restart is not filed again.
	n.in <- Inbound{Chat: "alice@example.org", From: "alice@example.org", Verified: true, Text: "hello", NetID: "m1"}
	p, _ := tms.Open(h, "dobby", tms.Options{})
	time.Sleep(300 * time.Millisecond)
	f, _ := p.ReadNoLock(ctx)
	if len(f.Tasks) != 1 {
		t.Fatalf("filed twice: %+v", f.Tasks)
	}
}

func TestServiceRetriesFailedSend(t *testing.T) {
	h := newHome(t, map[string]string{"dobby": dobbySpec})
	rec, _ := Open(h.Worker("dobby"), "team:alice@example.org")
	rec.Queue(ctx, Reply{Text: "answer", By: "run"})
	n := &memNet{in: make(chan Inbound), failing: true}
	s := &Service{Home: h, Adapters: map[string]Adapter{"team": n}}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(cctx) }()
	defer func() { cancel(); <-done }()
	eventually(t, "an attempt failed", func() bool {
		pend, _ := rec.Pending()
		return len(pend) == 1 && pend[0].Attempts >= 1 && !pend[0].MaybeSent()
	})
	n.mu.Lock()
	n.failing = false
	n.mu.Unlock()
	eventually(t, "sent after the retry", func() bool {
		lines, _ := rec.Read(0)
		return Fold(lines)[0].State == Sent
	})
}

// Over budget, a proactive message is filed (it waits late in the task
// list) and the conversation gets one notice a day; an owner's gets none.
func TestServiceBudgetNoticeOncePerDay(t *testing.T) {
	h := newHome(t, map[string]string{"dobby": dobbySpec})
	if err := os.WriteFile(h.OrgFile(), []byte("[budget]\nproactive_starts = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := home.NewRunID(time.Now())
	w := h.Worker("dobby")
	os.MkdirAll(w.Run(run), 0o700)
	if err := runs.WriteRecord(w.Run(run), &runs.Record{ID: run, Worker: "dobby", Standing: tms.Proactive, StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	n := &memNet{in: make(chan Inbound)}
	s := &Service{Home: h, Adapters: map[string]Adapter{"team": n}}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(cctx) }()
	defer func() { cancel(); <-done }()
	n.in <- Inbound{Chat: "alice@example.org", From: "alice@example.org", Verified: true, Text: "owner", NetID: "a1"}
	n.in <- Inbound{Chat: "bob@example.org", From: "bob@example.org", Verified: true, Text: "one", NetID: "b1"}
	n.in <- Inbound{Chat: "bob@example.org", From: "bob@example.org", Verified: true, Text: "two", NetID: "b2"}
	p, _ := tms.Open(h, "dobby", tms.Options{})
	eventually(t, "all three filed and the notice sent", func() bool {
		f, _ := p.ReadNoLock(ctx)
		n.mu.Lock()
		defer n.mu.Unlock()
		return len(f.Tasks) == 3 && len(n.sent) == 1
	})
	time.Sleep(500 * time.Millisecond)
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.sent) != 1 || !strings.HasPrefix(n.sent[0], "bob@example.org: dobby has used its budget") {
		t.Fatalf("want one notice to bob: %q", n.sent)
	}
}
