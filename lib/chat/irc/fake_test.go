package irc

// ngIRCd has no SASL, no accounts and no message tags, so these paths are
// tested against this fake server: a line exchange, every line parsed and
// built with ircmsg, just enough of IRCv3 for ircevent's client.

import (
	"bufio"
	"context"
	"encoding/base64"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ergochat/irc-go/ircmsg"

	"github.com/roster-sh/roster/lib/chat"
)

type fakeServer struct {
	t        *testing.T
	ln       net.Listener
	password string                 // the SASL password accepted
	accounts map[string]string      // nick -> account, for WHOIS
	got      chan ircmsg.Message    // what clients send after registering
	up       chan func(line string) // per registered client: send it a line
	mu       sync.Mutex
	conns    int
}

func startFake(t *testing.T, password string) *fakeServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{t: t, ln: ln, password: password, accounts: map[string]string{},
		got: make(chan ircmsg.Message, 100), up: make(chan func(string), 10)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.conns++
			f.mu.Unlock()
			go f.serve(c)
		}
	}()
	return f
}

func (f *fakeServer) serve(c net.Conn) {
	defer c.Close()
	var wmu sync.Mutex
	send := func(tags map[string]string, source, cmd string, params ...string) {
		m := ircmsg.MakeMessage(tags, source, cmd, params...)
		b, err := m.LineBytes()
		if err != nil {
			f.t.Errorf("fake: %v", err)
			return
		}
		wmu.Lock()
		c.Write(b)
		wmu.Unlock()
	}
	var nick string
	var user, capEnd, registered bool
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		m, err := ircmsg.ParseLine(sc.Text())
		if err != nil {
			continue
		}
		switch m.Command {
		case "CAP":
			switch m.Params[0] {
			case "LS":
				send(nil, "fake.test", "CAP", "*", "LS", "sasl account-tag account-notify message-tags server-time")
			case "REQ":
				send(nil, "fake.test", "CAP", "*", "ACK", m.Params[1])
			case "END":
				capEnd = true
			}
		case "AUTHENTICATE":
			if m.Params[0] == "PLAIN" {
				send(nil, "", "AUTHENTICATE", "+")
				continue
			}
			raw, _ := base64.StdEncoding.DecodeString(m.Params[0])
			if string(raw) == "dobby\x00dobby\x00"+f.password {
				send(nil, "fake.test", "900", "*", "dobby!dobby@fake", "dobby", "You are now logged in as dobby")
				send(nil, "fake.test", "903", "*", "SASL authentication successful")
			} else {
				send(nil, "fake.test", "904", "*", "SASL authentication failed")
			}
		case "NICK":
			nick = m.Params[0]
		case "USER":
			user = true
		case "PING":
			send(nil, "fake.test", "PONG", "fake.test", m.Params[0])
		case "WHOIS":
			f.got <- m
			f.whois(send, nick, m.Params[0])
		case "QUIT":
			return
		default:
			if registered {
				f.got <- m
			}
		}
		if !registered && nick != "" && user && capEnd {
			registered = true
			send(nil, "fake.test", "001", nick, "Welcome")
			send(nil, "fake.test", "376", nick, "End of MOTD")
			f.up <- func(line string) {
				wmu.Lock()
				c.Write([]byte(line + "\r\n"))
				wmu.Unlock()
			}
		}
	}
}

func (f *fakeServer) whois(send func(map[string]string, string, string, ...string), me, who string) {
	f.mu.Lock()
	acct, online := f.accounts[who]
	f.mu.Unlock()
	if !online {
		send(nil, "fake.test", "401", me, who, "No such nick")
		send(nil, "fake.test", "318", me, who, "End of WHOIS")
		return
	}
	send(nil, "fake.test", "311", me, who, "u", "host", "*", "real")
	if acct != "" {
		send(nil, "fake.test", "330", me, who, acct, "is logged in as")
	}
	send(nil, "fake.test", "318", me, who, "End of WHOIS")
}

func (f *fakeServer) registered() func(string) {
	f.t.Helper()
	select {
	case s := <-f.up:
		return s
	case <-time.After(waitFor):
		f.t.Fatal("fake: no client registered")
	}
	return nil
}

func (f *fakeServer) next() ircmsg.Message {
	f.t.Helper()
	select {
	case m := <-f.got:
		return m
	case <-time.After(waitFor):
		f.t.Fatal("fake: the client sent nothing")
	}
	return ircmsg.Message{}
}

func TestSASLAndAccountTag(t *testing.T) {
	f := startFake(t, "s3cret")
	f.accounts["alice_away"] = "alice"
	f.accounts["bob"] = "" // online, logged in as nobody
	cfg := testConfig(f.ln.Addr().String(), "dobby", "#ops")
	cfg.Password = "s3cret"
	r := newRunning(t, cfg)
	r.start()
	say := f.registered()
	if m := f.next(); m.Command != "JOIN" || m.Params[0] != "#ops" {
		t.Fatalf("first line after registering: %v", m)
	}

	say("@account=alice;msgid=m-1;time=2024-01-02T03:04:05.678Z :alice!a@host PRIVMSG dobby :hello")
	m := r.next()
	at := time.Date(2024, 1, 2, 3, 4, 5, 678e6, time.UTC)
	if m.From != "alice" || !m.Verified || m.Chat != "alice" || m.Room || m.NetID != "m-1" || !m.At.Equal(at) {
		t.Fatalf("delivered %+v", m)
	}
	say("@account=*;msgid=m-2 :carol!c@host PRIVMSG dobby :logged out")
	if m := r.next(); m.From != "~carol" || m.Verified || m.Chat != "~carol" {
		t.Fatalf("delivered %+v", m)
	}
	say(":mallory!m@host PRIVMSG dobby :no tags")
	if m := r.next(); m.From != "~mallory" || m.Verified {
		t.Fatalf("delivered %+v", m)
	}
	say("@account=alice :alice_away!a@host PRIVMSG #OPS :from the room")
	if m := r.next(); m.From != "alice" || !m.Verified || m.Chat != "#ops" || !m.Room {
		t.Fatalf("delivered %+v", m)
	}

	// A reply to the account goes to the nick WHOIS confirms...
	if _, err := r.a.Send(context.Background(), "alice", "reply"); err != nil {
		t.Fatal(err)
	}
	if m := f.next(); m.Command != "WHOIS" || m.Params[0] != "alice_away" {
		t.Fatalf("want a WHOIS of the nick alice used, got %v", m)
	}
	if m := f.next(); m.Command != "PRIVMSG" || m.Params[0] != "alice_away" || m.Params[1] != "reply" {
		t.Fatalf("fake got %v", m)
	}
	// ...and never to a nick of the account's name not logged in as it.
	if _, err := r.a.Send(context.Background(), "bob", "secret"); err == nil || !strings.Contains(err.Error(), "not online") {
		t.Fatalf("Send to an unconfirmed account = %v", err)
	}
	if m := f.next(); m.Command != "WHOIS" {
		t.Fatalf("fake got %v", m)
	}
	select {
	case m := <-f.got:
		t.Fatalf("sent to an unconfirmed nick: %v", m)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestSASLRefusedIsFatal(t *testing.T) {
	f := startFake(t, "right")
	cfg := testConfig(f.ln.Addr().String(), "dobby")
	cfg.Password = "wrong"
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.MinBackoff = 10 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	err = a.Run(ctx, func(context.Context, chat.Inbound) error { return nil })
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "refused the SASL PLAIN login") ||
		!strings.Contains(err.Error(), "credential") || !strings.Contains(err.Error(), "test") {
		t.Fatalf("Run = %v", err)
	}
	f.mu.Lock()
	n := f.conns
	f.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d connections: a refused login must not be retried", n)
	}
	t.Logf("refused in %v: %v", time.Since(start), err)
}
