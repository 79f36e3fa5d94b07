package xmpp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/chat"
	"github.com/roster-sh/roster/lib/chat/chattest"
)

func TestMain(m *testing.M) {
	backoffMin, backoffMax = 100*time.Millisecond, time.Second
	pingEvery = 5 * time.Second
	os.Exit(m.Run())
}

func TestDMDeliveredVerifiedWithStanzaID(t *testing.T) {
	p := chattest.StartProsody(t)
	p.AddUser("dobby", "dpw")
	p.AddUser("alice", "apw")
	rec := newRecorder()
	r := startAdapter(t, accountConfig(p, "dobby", "dpw", "alice@localhost"), rec.deliver)
	r.waitLive(t)
	alice := dialPerson(t, p, "alice", "apw")

	before := time.Now()
	id := alice.dm("dobby@localhost", "hello dobby")
	got := rec.waitFor(t, "the DM", func(g []chat.Inbound) bool { return len(withText(g, "hello dobby")) > 0 })
	m := withText(got, "hello dobby")[0]
	if m.Chat != "alice@localhost" || m.From != "alice@localhost" || !m.Verified || m.Room || m.History {
		t.Fatalf("DM delivered as %+v; want chat = from = alice@localhost, verified, not room, not history", m)
	}
	if m.NetID == "" || m.NetID == id {
		t.Fatalf("NetID %q: want the server's stanza-id, not the sender's id %q", m.NetID, id)
	}
	if !m.At.IsZero() && m.At.Before(before.Add(-time.Minute)) {
		t.Fatalf("At = %v for a live message", m.At)
	}
	r.waitMark(t, "", m.NetID)
}

func TestSendReachesPersonCleaned(t *testing.T) {
	p := chattest.StartProsody(t)
	p.AddUser("dobby", "dpw")
	p.AddUser("alice", "apw")
	r := startAdapter(t, accountConfig(p, "dobby", "dpw", "alice@localhost"), newRecorder().deliver)
	alice := dialPerson(t, p, "alice", "apw")
	r.waitLive(t)

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	netID, err := r.a.Send(ctx, "alice@localhost", "line one\r\nbell\x07 <b>&amp;\x1b[31m\tend")
	if err != nil {
		t.Fatal(err)
	}
	m := alice.next(func(m message) bool { return strings.HasPrefix(m.From, "dobby@localhost") })
	want := "line one\nbell <b>&amp;[31m\tend"
	if m.Bodies[0].Text != want || m.Type != "chat" {
		t.Fatalf("alice got %q (type %q); want %q (type chat)", m.Bodies[0].Text, m.Type, want)
	}
	if m.ID != netID || netID == "" {
		t.Fatalf("Send returned %q, the message's id is %q", netID, m.ID)
	}

	defer func(old int) { maxBody = old }(maxBody)
	maxBody = 10
	long := "0123456789abcdefghij\nklmno"
	first, err := r.a.Send(ctx, "alice@localhost", long)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(strings.Join(got, "")) < len(long) {
		m := alice.next(func(m message) bool { return strings.HasPrefix(m.From, "dobby@localhost") })
		if len(got) == 0 && m.ID != first {
			t.Fatalf("the first part has id %q; Send returned %q", m.ID, first)
		}
		got = append(got, m.Bodies[0].Text)
	}
	if strings.Join(got, "") != long || len(got) != 3 {
		t.Fatalf("a long text arrived as %q", got)
	}
}

func TestSendFailsFastWhenNotConnected(t *testing.T) {
	a, err := New(chat.Config{Account: "team", Address: "dobby@localhost", Server: "127.0.0.1:1", TLS: "off", Password: "x"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = a.Send(context.Background(), "alice@localhost", "hi")
	if !errors.Is(err, ErrNotConnected) || time.Since(start) > time.Second {
		t.Fatalf("Send without a session: %v after %s; want ErrNotConnected at once", err, time.Since(start))
	}
	if _, err := a.Send(context.Background(), "alice@localhost/phone", "hi"); err == nil {
		t.Fatal("Send to a full JID: want an error")
	}
}

func TestRoomMessageHasOccupantIdentity(t *testing.T) {
	p := chattest.StartProsody(t)
	p.AddUser("dobby", "dpw")
	p.AddUser("alice", "apw")
	room := p.RoomJID("ops")
	alice := dialPerson(t, p, "alice", "apw")
	alice.join(room, "Alice")
	rec := newRecorder()
	r := startAdapter(t, accountConfig(p, "dobby", "dpw", room), rec.deliver)
	r.waitLive(t, room)

	alice.say(room, "status, dobby?")
	got := rec.waitFor(t, "the room message", func(g []chat.Inbound) bool { return len(withText(g, "status, dobby?")) > 0 })
	m := withText(got, "status, dobby?")[0]
	if !m.Room || m.Chat != room || m.From != "alice@localhost" || !m.Verified || m.History || m.NetID == "" {
		t.Fatalf("room message delivered as %+v; want room %s from verified alice@localhost", m, room)
	}
	r.waitMark(t, room, m.NetID)

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := r.a.Send(ctx, room, "all green"); err != nil {
		t.Fatal(err)
	}
	echo := alice.next(func(m message) bool { return m.From == room+"/dobby" })
	if echo.Type != "groupchat" || echo.Bodies[0].Text != "all green" {
		t.Fatalf("alice saw %+v", echo)
	}
	// Our own echo is not delivered: after a later message, still only one.
	alice.say(room, "thanks")
	got = rec.waitFor(t, "the next room message", func(g []chat.Inbound) bool { return len(withText(g, "thanks")) > 0 })
	if len(withText(got, "all green")) != 0 {
		t.Fatalf("our own room message was delivered back: %+v", got)
	}
}

func TestRoomHidingJIDsGivesUnverifiedOccupant(t *testing.T) {
	p := chattest.StartProsody(t)
	p.AddUser("dobby", "dpw")
	p.AddUser("alice", "apw")
	room := p.RoomJID("quiet")
	alice := dialPerson(t, p, "alice", "apw")
	alice.join(room, "Alice")
	alice.hideJIDs(room)
	rec := newRecorder()
	r := startAdapter(t, accountConfig(p, "dobby", "dpw", room), rec.deliver)
	r.waitLive(t, room)

	alice.say(room, "who am I")
	m := withText(rec.waitFor(t, "the room message", func(g []chat.Inbound) bool { return len(withText(g, "who am I")) > 0 }), "who am I")[0]
	if m.From != "~"+room+"/Alice" || m.Verified {
		t.Fatalf("occupant of a semi-anonymous room delivered as %q verified=%v; want ~%s/Alice unverified", m.From, m.Verified, room)
	}
}

// The chat server restarted mid-conversation: what was said while the
// adapter was away arrives after it reconnects, from the archives.
func TestCatchUpAfterServerRestart(t *testing.T) {
	defer func(old time.Duration, page uint64) { backoffMin, mamPage = old, page }(backoffMin, mamPage)
	backoffMin = 3 * time.Second // room for the person to speak first
	mamPage = 4                  // several pages
	p := chattest.StartProsody(t)
	p.AddUser("dobby", "dpw")
	p.AddUser("alice", "apw")
	room := p.RoomJID("ops")
	alice := dialPerson(t, p, "alice", "apw")
	alice.join(room, "Alice")
	rec := newRecorder()
	r := startAdapter(t, accountConfig(p, "dobby", "dpw", "alice@localhost", room), rec.deliver)
	r.waitLive(t, room)
	alice.dm("dobby@localhost", "before")
	rec.waitFor(t, "the first DM", func(g []chat.Inbound) bool { return len(withText(g, "before")) > 0 })

	p.Restart()
	r.waitDown(t)
	alice = dialPerson(t, p, "alice", "apw")
	alice.join(room, "Alice")
	for i := 1; i <= 11; i++ {
		alice.dm("dobby@localhost", fmt.Sprintf("while away %d", i))
	}
	alice.say(room, "room while away")
	r.a.mu.Lock()
	live := r.a.live
	r.a.mu.Unlock()
	if live != nil {
		t.Fatal("the adapter reconnected before the person spoke; the test's timing assumption failed")
	}

	got := rec.waitFor(t, "catch-up", func(g []chat.Inbound) bool {
		return hasHistory(g, "while away 1") && hasHistory(g, "while away 11") && hasHistory(g, "room while away")
	})
	var order []string
	for _, m := range got {
		if m.History && !m.Room {
			order = append(order, m.Text)
		}
	}
	var want []string
	for i := 1; i <= 11; i++ {
		want = append(want, fmt.Sprintf("while away %d", i))
	}
	if strings.Join(order, "|") != strings.Join(want, "|") {
		t.Fatalf("DM catch-up delivered %q; want the eleven messages in order, once each (pages of %d)", order, mamPage)
	}
	for _, m := range withText(got, "room while away") {
		if !m.Room || m.Chat != room || m.From != "alice@localhost" || !m.Verified {
			t.Fatalf("room catch-up delivered %+v", m)
		}
	}
	for _, text := range []string{"while away 1", "before"} {
		ids := map[string]bool{}
		for _, m := range withText(got, text) {
			ids[m.NetID] = true
		}
		if len(ids) != 1 {
			t.Fatalf("%q delivered with NetIDs %v; want one id for all copies", text, ids)
		}
	}
}

func hasHistory(got []chat.Inbound, text string) bool {
	for _, m := range withText(got, text) {
		if m.History {
			return true
		}
	}
	return false
}

// A message Deliver did not take is not acknowledged: the server gives it
// again (from its unacknowledged queue, not only from the archive), and a
// message that was taken is not given again.
func TestDeliverErrorIsNotAcknowledged(t *testing.T) {
	p := chattest.StartProsody(t)
	p.AddUser("dobby", "dpw")
	p.AddUser("alice", "apw")
	rec := newRecorder()
	failed := false
	rec.fail = func(m chat.Inbound) error {
		if m.Text == "boom" && !failed {
			failed = true
			return fmt.Errorf("disk full: %w", errNotNow)
		}
		return nil
	}
	r := startAdapter(t, accountConfig(p, "dobby", "dpw", "alice@localhost"), rec.deliver)
	r.waitLive(t)
	alice := dialPerson(t, p, "alice", "apw")
	alice.dm("dobby@localhost", "taken")
	rec.waitFor(t, "the first message", func(g []chat.Inbound) bool { return len(withText(g, "taken")) == 1 })
	alice.dm("dobby@localhost", "boom")
	rec.waitFor(t, "the redelivery", func(g []chat.Inbound) bool {
		for _, m := range withText(g, "boom") {
			if !m.History {
				return true
			}
		}
		return false
	})
	alice.dm("dobby@localhost", "after")
	got := rec.waitFor(t, "a later message", func(g []chat.Inbound) bool { return len(withText(g, "after")) > 0 })

	rec.mu.Lock()
	offered := len(withText(rec.seen, "boom"))
	rec.mu.Unlock()
	if offered < 2 {
		t.Fatalf("boom offered %d times; want the refused one and a redelivery", offered)
	}
	ids := map[string]bool{}
	for _, m := range withText(got, "boom") {
		ids[m.NetID] = true
	}
	if len(ids) != 1 {
		t.Fatalf("boom redelivered with NetIDs %v; want the same id", ids)
	}
	if n := len(withText(got, "taken")); n != 1 {
		t.Fatalf("the acknowledged message was delivered %d times; want once", n)
	}
}

func TestWrongPasswordIsFatal(t *testing.T) {
	p := chattest.StartProsody(t)
	p.AddUser("dobby", "dpw")
	a, err := New(accountConfig(p, "dobby", "wrong"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err = a.Run(ctx, newRecorder().deliver)
	if !errors.Is(err, ErrLoginRefused) || !strings.Contains(err.Error(), "credential") || ctx.Err() != nil {
		t.Fatalf("Run with a wrong password: %v; want ErrLoginRefused naming the credential, before the timeout", err)
	}
	if testing.Verbose() {
		t.Log(err)
	}
}

func TestTLSModesConnect(t *testing.T) {
	p := chattest.StartProsody(t)
	p.AddUser("dobby", "dpw")
	for _, tc := range []struct{ mode, addr string }{
		{"require", p.TLSAddr}, {"starttls", p.Addr}, {"off", p.Addr},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cfg := accountConfig(p, "dobby", "dpw")
			cfg.TLS, cfg.Server = tc.mode, tc.addr
			r := startAdapter(t, cfg, newRecorder().deliver)
			r.waitLive(t)
			r.a.mu.Lock()
			encrypted := r.a.live.s.ConnectionState().Version != 0
			r.a.mu.Unlock()
			if encrypted != (tc.mode != "off") {
				t.Fatalf("tls = %s: encrypted = %v", tc.mode, encrypted)
			}
			r.stop()
		})
	}
}

func TestTLSRequireRejectsUntrustedCert(t *testing.T) {
	p := chattest.StartProsody(t)
	p.AddUser("dobby", "dpw")
	cfg := accountConfig(p, "dobby", "dpw")
	cfg.TLS, cfg.Server, cfg.CAFile = "require", p.TLSAddr, ""
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, _, err := a.dial(ctx); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("dial with the system roots to a self-signed server: %v; want a certificate error", err)
	}
}

func TestTLSOffRefusedForNonLoopback(t *testing.T) {
	for _, server := range []string{"192.0.2.7:5222", "chat.example.org:5222", ""} {
		_, err := New(chat.Config{Account: "team", Address: "dobby@chat.example.org", Server: server, TLS: "off", Password: "x"})
		if err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("tls = off to %q: %v; want a refusal naming loopback", server, err)
		}
	}
	for _, server := range []string{"127.0.0.1:5222", "[::1]:5222", "localhost:5222"} {
		if _, err := New(chat.Config{Account: "team", Address: "dobby@localhost", Server: server, TLS: "off", Password: "x"}); err != nil {
			t.Errorf("tls = off to %q: %v", server, err)
		}
	}
}

// Kicked out of a room, the adapter goes back in and catches up on what
// was said meanwhile.
func TestRejoinAfterKickCatchesUp(t *testing.T) {
	defer func(old time.Duration) { pingEvery = old }(pingEvery)
	pingEvery = 300 * time.Millisecond
	p := chattest.StartProsody(t)
	p.AddUser("dobby", "dpw")
	p.AddUser("alice", "apw")
	room := p.RoomJID("ops")
	alice := dialPerson(t, p, "alice", "apw")
	alice.join(room, "Alice")
	rec := newRecorder()
	r := startAdapter(t, accountConfig(p, "dobby", "dpw", room), rec.deliver)
	r.waitLive(t, room)
	alice.say(room, "first")
	rec.waitFor(t, "the first room message", func(g []chat.Inbound) bool { return len(withText(g, "first")) > 0 })

	alice.kick(room, "dobby")
	alice.say(room, "said while dobby was out")
	got := rec.waitFor(t, "the catch-up after the rejoin", func(g []chat.Inbound) bool {
		return hasHistory(g, "said while dobby was out")
	})
	if n := len(withText(got, "first")); n != 1 {
		t.Fatalf("the message before the kick was delivered %d times; want once (catch-up starts after it)", n)
	}
	r.waitLive(t, room)
}
