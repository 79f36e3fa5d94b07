package irc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ergochat/irc-go/ircmsg"

	"github.com/roster-sh/roster/lib/chat"
)

func TestDMIsUnverifiedEvenWithAnOwnersName(t *testing.T) {
	srv := startServer(t)
	r := newRunning(t, testConfig(srv.Addr, "dobby", "alice", "~alice"))
	r.start()
	r.waitUp()
	alice := newPerson(t, srv.Addr, "alice") // the owner's name, as a mere nick
	alice.say("dobby", "hello dobby")
	m := r.next()
	want := chat.Inbound{Chat: "~alice", From: "~alice", Text: "hello dobby"}
	if m.Chat != want.Chat || m.From != want.From || m.Verified || m.Room || m.Text != want.Text {
		t.Fatalf("delivered %+v, want %+v (unverified)", m, want)
	}
	if !strings.HasPrefix(m.NetID, "irc-") || len(m.NetID) < 10 {
		t.Fatalf("NetID %q: want a made-up irc-… id", m.NetID)
	}
	alice.say("dobby", "again")
	if m2 := r.next(); m2.NetID == m.NetID || m2.Text != "again" {
		t.Fatalf("second message %+v: want a new NetID and the text", m2)
	}

	id, err := r.a.Send(context.Background(), "~alice", "hi alice")
	if err != nil || !strings.HasPrefix(id, "irc-") {
		t.Fatalf("Send = %q, %v", id, err)
	}
	got := alice.next()
	if got.Nick() != "dobby" || got.Params[0] != "alice" || got.Params[1] != "hi alice" {
		t.Fatalf("alice got %v", got)
	}
	if r.a.Nick() != "dobby" {
		t.Fatalf("Nick = %q", r.a.Nick())
	}
	// Without an account tag there is nobody verified to send "alice" to.
	if _, err := r.a.Send(context.Background(), "alice", "secret"); err == nil {
		t.Fatal(`Send to the verified "alice" went to the nick alice on a server without accounts`)
	}
}

func TestRoomMessage(t *testing.T) {
	srv := startServer(t)
	bob := newPerson(t, srv.Addr, "bob")
	bob.conn.Join("#ops")
	bob.waitJoin("bob", "#ops")
	r := newRunning(t, testConfig(srv.Addr, "dobby", "#ops", "~bob"))
	r.start()
	bob.waitJoin("dobby", "#ops")
	bob.say("#OPS", "dobby: status?") // another spelling of the room
	m := r.next()
	if m.Chat != "#ops" || !m.Room || m.From != "~bob" || m.Verified || m.Text != "dobby: status?" {
		t.Fatalf("delivered %+v", m)
	}
	if _, err := r.a.Send(context.Background(), "#ops", "all good"); err != nil {
		t.Fatal(err)
	}
	got := bob.next()
	if !foldEq(got.Params[0], "#ops") || got.Params[1] != "all good" {
		t.Fatalf("bob got %v", got)
	}
	if _, err := r.a.Send(context.Background(), "#elsewhere", "x"); err == nil {
		t.Fatal("Send to a room not among the chats worked")
	}
}

func TestCTCPNoticeAndAction(t *testing.T) {
	srv := startServer(t)
	r := newRunning(t, testConfig(srv.Addr, "dobby"))
	r.start()
	r.waitUp()
	bob := newPerson(t, srv.Addr, "bob")
	bob.say("dobby", "\x01VERSION\x01")
	bob.conn.Notice("dobby", "a notice")
	bob.say("dobby", "\x01PING 123\x01")
	bob.say("dobby", "\x01ACTION waves\x01")
	bob.say("dobby", "\x02bold\x02 and \x0304red\x03")
	if m := r.next(); m.Text != "* bob waves" {
		t.Fatalf("first delivery %+v: want the ACTION only", m)
	}
	if m := r.next(); m.Text != "bold and red" {
		t.Fatalf("formatted text delivered as %q", m.Text)
	}
	r.none(200 * time.Millisecond)
	select {
	case m := <-bob.msgs:
		t.Fatalf("a CTCP was answered: %v", m)
	default:
	}
}

func TestUnsafeReplyArrivesClean(t *testing.T) {
	srv := startServer(t)
	r := newRunning(t, testConfig(srv.Addr, "dobby"))
	wire := &tap{}
	r.a.dialHook = wire.dial
	r.start()
	r.waitUp()
	bob := newPerson(t, srv.Addr, "bob")
	text := "one\r\ntwo\x00three\x01ACTION x\x01\rfour\n\n  \nfive\x02bold\tok\r\nQUIT :injected\x00\n"
	if _, err := r.a.Send(context.Background(), "~bob", text); err != nil {
		t.Fatal(err)
	}
	want := []string{"one", "twothreeACTION xfour", "fivebold ok", "QUIT :injected"}
	for _, w := range want {
		if m := bob.next(); m.Params[1] != w {
			t.Fatalf("bob got %q, want %q", m.Params[1], w)
		}
	}
	// Nothing raw on either wire: every line ends in CRLF, and no line
	// holds \x01, NUL, or a CR or LF of its own.
	time.Sleep(100 * time.Millisecond)
	for side, lines := range map[string][]string{"adapter wrote": wire.lines(true), "bob read": bob.tap.lines(false)} {
		for _, l := range lines {
			body, ok := strings.CutSuffix(l, "\r\n")
			if !ok && l != "" {
				t.Errorf("%s: unterminated %q", side, l)
			}
			if strings.ContainsAny(body, "\x00\x01\r\n") {
				t.Errorf("%s: raw control character in %q", side, l)
			}
		}
	}
}

func TestLongTextSplitAndRateLimited(t *testing.T) {
	srv := startServer(t)
	r := newRunning(t, testConfig(srv.Addr, "dobby"))
	r.a.Burst, r.a.Every = 4, time.Millisecond
	r.start()
	r.waitUp()
	bob := newPerson(t, srv.Addr, "bob")

	var sb strings.Builder
	for i := 0; sb.Len() < 1<<20; i++ {
		sb.WriteString("wörd€🙂 ")
		if i%97 == 0 {
			sb.WriteString(strings.Repeat("x", 700)) // no space to split at
		}
	}
	text := sb.String()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := r.a.Send(ctx, "~bob", text); err != nil {
		t.Fatal(err)
	}
	sent := time.Since(start)
	want := strings.ReplaceAll(text, " ", "")
	var got strings.Builder
	n := 0
	for got.Len() < len(want) {
		m := bob.next()
		if !utf8.ValidString(m.Params[1]) {
			t.Fatalf("line %d not valid UTF-8", n)
		}
		got.WriteString(strings.ReplaceAll(m.Params[1], " ", ""))
		n++
	}
	if got.String() != want {
		t.Fatal("the text arrived altered")
	}
	if min := time.Duration(n-4) * time.Millisecond; sent < min {
		t.Fatalf("%d lines sent in %v: faster than the limit allows (%v)", n, sent, min)
	}
	time.Sleep(100 * time.Millisecond)
	for _, l := range bob.tap.lines(false) {
		if len(l) > 512 {
			t.Fatalf("a line of %d bytes on the wire", len(l))
		}
	}
	t.Logf("1 MiB: %d lines, sent in %v", n, sent)

	// The default-like pace: a burst of 4, then one per Every.
	r.a.bucket.init(4, 40*time.Millisecond)
	start = time.Now()
	if _, err := r.a.Send(ctx, "~bob", strings.Repeat("line\n", 10)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 6*40*time.Millisecond-5*time.Millisecond {
		t.Fatalf("10 lines in %v: the bucket did not hold them back", d)
	}
	// And a Send waiting for tokens gives up with its ctx.
	r.a.bucket.init(1, time.Hour)
	short, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	if _, err := r.a.Send(short, "~bob", "a\nb"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Send past its ctx = %v", err)
	}
}

func TestReconnectAfterServerRestart(t *testing.T) {
	srv := startServer(t)
	r := newRunning(t, testConfig(srv.Addr, "dobby", "#ops"))
	r.start()
	r.waitUp()
	bob := newPerson(t, srv.Addr, "bob")
	bob.say("dobby", "before")
	if m := r.next(); m.Text != "before" {
		t.Fatalf("delivered %+v", m)
	}

	srv.Restart()
	bob2 := newPerson(t, srv.Addr, "bob")
	bob2.conn.Join("#ops")
	bob2.waitJoin("dobby", "#ops") // reconnected, and the room joined again
	if _, err := r.a.Send(context.Background(), "~bob", "after"); err != nil {
		t.Fatal(err)
	}
	if m := bob2.next(); m.Params[1] != "after" {
		t.Fatalf("bob got %v", m)
	}
	bob2.say("#ops", "room after")
	if m := r.next(); m.Text != "room after" || m.Chat != "#ops" {
		t.Fatalf("delivered %+v", m)
	}
}

func TestDeliverErrorDropsTheConnection(t *testing.T) {
	srv := startServer(t)
	r := newRunning(t, testConfig(srv.Addr, "dobby"))
	r.fail = func(m chat.Inbound) error {
		if m.Text == "disk full" {
			return errors.New("no space left on device")
		}
		return nil
	}
	r.start()
	r.waitUp()
	first := r.a.current()
	bob := newPerson(t, srv.Addr, "bob")
	bob.say("dobby", "disk full")
	deadline := time.Now().Add(waitFor)
	for {
		if s := r.a.current(); s != nil && s != first {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the connection was not dropped and remade")
		}
		time.Sleep(10 * time.Millisecond)
	}
	bob.say("dobby", "later")
	if m := r.next(); m.Text != "later" {
		t.Fatalf("delivered %+v", m)
	}
	if !strings.Contains(r.logs.String(), "Deliver failed") {
		t.Fatal("the lost message was not logged")
	}
}

func TestNickInUseFallsBack(t *testing.T) {
	srv := startServer(t)
	newPerson(t, srv.Addr, "dobby")
	r := newRunning(t, testConfig(srv.Addr, "dobby"))
	r.start()
	r.waitUp()
	nick := r.a.Nick()
	if nick == "dobby" || !strings.HasPrefix(nick, "dobby_") {
		t.Fatalf("Nick = %q, want a fallback", nick)
	}
	bob := newPerson(t, srv.Addr, "bob")
	bob.say(nick, "hi")
	if m := r.next(); m.Text != "hi" || m.From != "~bob" {
		t.Fatalf("delivered %+v", m)
	}
}

func TestTLSRequire(t *testing.T) {
	srv := startServer(t)
	port := srv.TLSAddr[strings.LastIndexByte(srv.TLSAddr, ':'):]
	cfg := testConfig("localhost"+port, "dobby")
	cfg.TLS, cfg.CAFile = "require", srv.CAFile
	r := newRunning(t, cfg)
	r.start()
	r.waitUp()
	bob := newPerson(t, srv.Addr, "bob")
	bob.say("dobby", "over tls")
	if m := r.next(); m.Text != "over tls" {
		t.Fatalf("delivered %+v", m)
	}
	if _, err := r.a.Send(context.Background(), "~bob", "back over tls"); err != nil {
		t.Fatal(err)
	}
	if m := bob.next(); m.Params[1] != "back over tls" {
		t.Fatalf("bob got %v", m)
	}

	// Without the CA file the certificate is not trusted: no connection.
	cfg.CAFile = ""
	r2 := newRunning(t, cfg)
	r2.start()
	time.Sleep(700 * time.Millisecond)
	if r2.a.current() != nil {
		t.Fatal("connected to an untrusted certificate")
	}
	if !strings.Contains(r2.logs.String(), "certificate") {
		t.Fatalf("no certificate error logged:\n%s", r2.logs.String())
	}
}

func TestPasswordWithoutSASLIsRefused(t *testing.T) {
	srv := startServer(t)
	cfg := testConfig(srv.Addr, "dobby")
	cfg.Password = "secret"
	r := newRunning(t, cfg)
	r.start()
	select {
	case err := <-r.errc:
		if err == nil || !strings.Contains(err.Error(), "does not offer SASL") || !strings.Contains(err.Error(), "credential") {
			t.Fatalf("Run = %v", err)
		}
		r.errc <- err // for the cleanup
	case <-time.After(waitFor):
		t.Fatal("Run did not give up")
	}
}

func TestSendNotConnected(t *testing.T) {
	a, err := New(testConfig("127.0.0.1:1", "dobby"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Send(context.Background(), "~bob", "x"); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("Send = %v", err)
	}
}

func TestManyMessagesInOrder(t *testing.T) {
	srv := startServer(t)
	r := newRunning(t, testConfig(srv.Addr, "dobby"))
	r.start()
	r.waitUp()
	bob := newPerson(t, srv.Addr, "bob")
	const n = 500
	go func() {
		for i := 0; i < n; i++ {
			bob.conn.Privmsg("dobby", fmt.Sprintf("message %d", i))
		}
	}()
	ids := map[string]bool{}
	for i := 0; i < n; i++ {
		m := r.next()
		if m.Text != fmt.Sprintf("message %d", i) || ids[m.NetID] {
			t.Fatalf("delivery %d: %+v", i, m)
		}
		ids[m.NetID] = true
	}
}

func TestCancelQuits(t *testing.T) {
	srv := startServer(t)
	bob := newPerson(t, srv.Addr, "bob")
	bob.conn.Join("#ops")
	bob.waitJoin("bob", "#ops")
	quits := make(chan string, 1)
	bob.conn.AddCallback("QUIT", func(m ircmsg.Message) { quits <- m.Nick() + ": " + lastParam(m) })
	r := newRunning(t, testConfig(srv.Addr, "dobby", "#ops"))
	r.start()
	bob.waitJoin("dobby", "#ops")
	start := time.Now()
	r.stop()
	select {
	case err := <-r.errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v", err)
		}
		r.errc <- err
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Fatalf("Run took %v to return", d)
	}
	select {
	case q := <-quits:
		if !strings.HasPrefix(q, "dobby: ") {
			t.Fatalf("QUIT %q", q)
		}
	case <-time.After(waitFor):
		t.Fatal("no QUIT seen")
	}
	if _, err := r.a.Send(context.Background(), "~bob", "x"); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("Send after Run = %v", err)
	}
}

func TestRefusedNickIsFatal(t *testing.T) {
	srv := startServer(t)
	a, err := New(testConfig(srv.Addr, "dobby_with_a_nick_longer_than_thirty"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	err = a.Run(ctx, func(context.Context, chat.Inbound) error { return nil })
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "refuses the nick") {
		t.Fatalf("Run = %v", err)
	}
}
