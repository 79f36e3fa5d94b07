package irc

import (
	"bytes"
	"context"
	"io"
	"log"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ergochat/irc-go/ircevent"
	"github.com/ergochat/irc-go/ircmsg"

	"github.com/roster-sh/roster/lib/chat"
	"github.com/roster-sh/roster/lib/chat/chattest"
)

const waitFor = 15 * time.Second

// tap records the raw bytes read from and written to a socket.
type tap struct {
	mu    sync.Mutex
	read  bytes.Buffer
	wrote bytes.Buffer
}

type tapConn struct {
	net.Conn
	t *tap
}

func (c tapConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.t.mu.Lock()
	c.t.read.Write(p[:n])
	c.t.mu.Unlock()
	return n, err
}

func (c tapConn) Write(p []byte) (int, error) {
	c.t.mu.Lock()
	c.t.wrote.Write(p)
	c.t.mu.Unlock()
	return c.Conn.Write(p)
}

func (t *tap) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return tapConn{c, t}, nil
}

func (t *tap) lines(wrote bool) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.read.String()
	if wrote {
		b = t.wrote.String()
	}
	return strings.SplitAfter(b, "\r\n")
}

// person is someone on IRC, a plain ircevent client.
type person struct {
	t     testing.TB
	conn  *ircevent.Connection
	tap   *tap
	msgs  chan ircmsg.Message // PRIVMSGs and NOTICEs received
	joins chan ircmsg.Message
	done  chan struct{}
}

func newPerson(t testing.TB, addr, nick string) *person {
	t.Helper()
	p := &person{t: t, tap: &tap{}, msgs: make(chan ircmsg.Message, 10000),
		joins: make(chan ircmsg.Message, 100), done: make(chan struct{})}
	p.conn = &ircevent.Connection{Server: addr, Nick: nick, Timeout: 5 * time.Second,
		KeepAlive: 30 * time.Second, ReconnectFreq: time.Hour, Log: log.New(io.Discard, "", 0),
		DialContext: p.tap.dial}
	p.conn.AddCallback("PRIVMSG", func(m ircmsg.Message) { p.msgs <- m })
	p.conn.AddCallback("JOIN", func(m ircmsg.Message) { p.joins <- m })
	if err := p.conn.Connect(); err != nil {
		t.Fatalf("person %s: connect: %v", nick, err)
	}
	go func() { defer close(p.done); p.conn.Loop() }()
	t.Cleanup(p.close)
	return p
}

func (p *person) close() {
	p.conn.Quit()
	if !p.conn.Connected() {
		p.conn.Reconnect() // wakes its Loop from the wait before reconnecting
	}
	select {
	case <-p.done:
	case <-time.After(3 * time.Second):
		p.conn.Reconnect()
		<-p.done
	}
}

func (p *person) say(target, text string) {
	p.t.Helper()
	if err := p.conn.Privmsg(target, text); err != nil {
		p.t.Fatalf("person: privmsg: %v", err)
	}
}

// next is the next PRIVMSG the person gets.
func (p *person) next() ircmsg.Message {
	p.t.Helper()
	select {
	case m := <-p.msgs:
		return m
	case <-time.After(waitFor):
		p.t.Fatal("person: no message")
	}
	return ircmsg.Message{}
}

// waitJoin waits until nick joins room (as the person sees it).
func (p *person) waitJoin(nick, room string) {
	p.t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case m := <-p.joins:
			if foldEq(m.Nick(), nick) && len(m.Params) > 0 && foldEq(m.Params[0], room) {
				return
			}
		case <-deadline:
			p.t.Fatalf("person: %s did not join %s", nick, room)
		}
	}
}

// running is an adapter running against a server in a test.
type running struct {
	t    testing.TB
	a    *Adapter
	in   chan chat.Inbound
	fail func(chat.Inbound) error // set before start: Deliver's answer
	errc chan error
	stop context.CancelFunc
	logs *syncBuf
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testConfig(addr, nick string, chats ...string) chat.Config {
	return chat.Config{Account: "test", Protocol: "irc", Address: nick + "@" + addr, TLS: "off", Chats: chats}
}

func newRunning(t testing.TB, cfg chat.Config) *running {
	t.Helper()
	r := &running{t: t, in: make(chan chat.Inbound, 10000), errc: make(chan error, 1), logs: &syncBuf{}}
	cfg.Log = slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	a.MinBackoff, a.MaxBackoff = 50*time.Millisecond, 500*time.Millisecond
	a.Timeout, a.KeepAlive = 5*time.Second, 10*time.Second
	r.a = a
	return r
}

func (r *running) start() {
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	go func() {
		r.errc <- r.a.Run(ctx, func(ctx context.Context, m chat.Inbound) error {
			if r.fail != nil {
				if err := r.fail(m); err != nil {
					return err
				}
			}
			r.in <- m
			return nil
		})
	}()
	r.t.Cleanup(func() {
		cancel()
		select {
		case <-r.errc:
		case <-time.After(10 * time.Second):
			r.t.Error("Run did not return after cancel")
		}
		if r.t.Failed() {
			r.t.Logf("adapter log:\n%s", r.logs.String())
		}
	})
}

// waitUp waits until the adapter is registered.
func (r *running) waitUp() {
	r.t.Helper()
	deadline := time.Now().Add(waitFor)
	for r.a.current() == nil {
		if time.Now().After(deadline) {
			r.t.Fatalf("adapter did not connect; log:\n%s", r.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (r *running) next() chat.Inbound {
	r.t.Helper()
	select {
	case m := <-r.in:
		return m
	case err := <-r.errc:
		r.t.Fatalf("Run returned: %v", err)
	case <-time.After(waitFor):
		r.t.Fatal("nothing delivered")
	}
	return chat.Inbound{}
}

func (r *running) none(d time.Duration) {
	r.t.Helper()
	select {
	case m := <-r.in:
		r.t.Fatalf("delivered unexpectedly: %+v", m)
	case <-time.After(d):
	}
}

func startServer(t *testing.T) *chattest.Ngircd {
	t.Parallel()
	return chattest.StartNgircd(t)
}
