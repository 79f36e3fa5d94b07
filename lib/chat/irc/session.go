package irc

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/ergochat/irc-go/ircevent"
	"github.com/ergochat/irc-go/ircmsg"

	"github.com/roster-sh/roster/lib/chat"
)

// wantCaps are requested where the server offers them (echo-message is
// not: our own lines need not come back).
var wantCaps = []string{"account-tag", "account-notify", "extended-join", "message-tags", "server-time"}

// queueLen bounds the messages read but not yet delivered; past it the
// reader waits (and the server's socket buffer fills).
const queueLen = 256

// session is one connection: a fresh ircevent.Connection each time, so no
// state of a dead connection leaks into the next.
type session struct {
	a    *Adapter
	ctx  context.Context
	conn *ircevent.Connection

	queue   chan chat.Inbound
	stop    chan struct{} // closed at teardown: callbacks stop waiting on queue
	gone    chan struct{} // closed when the connection ends
	gonce   sync.Once
	dropped chan struct{} // closed when a Deliver failed
	dialed  chan net.Conn // the socket, for closing it if ctx ends mid-connect

	mu          sync.Mutex
	capLS       map[string]bool // what the server offered, nil before CAP LS
	saslOK      bool
	saslRefused string // the server's 90x text
	fatal       error  // set by a callback: do not reconnect
	whoisReq    *whois
}

func (a *Adapter) newSession(ctx context.Context) *session {
	s := &session{a: a, ctx: ctx,
		queue: make(chan chat.Inbound, queueLen), stop: make(chan struct{}),
		gone: make(chan struct{}), dropped: make(chan struct{}), dialed: make(chan net.Conn, 1)}
	c := &ircevent.Connection{
		Server:      a.dial,
		Nick:        a.nick,
		User:        a.nick,
		RealName:    "roster",
		RequestCaps: append([]string(nil), wantCaps...),
		UseTLS:      a.useTLS,
		TLSConfig:   a.tlsConf.Clone(),
		Timeout:     a.Timeout,
		KeepAlive:   a.KeepAlive,
		QuitMessage: "roster-chat",
		MaxLineLen:  512,
		DialContext: s.dialContext,
		Log:         log.New(slogWriter{a.log}, "", 0),
	}
	if a.cfg.Password != "" {
		c.UseSASL, c.SASLMech = true, "PLAIN"
		c.SASLLogin, c.SASLPassword = a.nick, a.cfg.Password
	}
	s.conn = c
	s.callbacks()
	return s
}

// slogWriter takes ircevent's log lines (its errors and notices).
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Debug("ircevent: " + strings.TrimSpace(string(p)))
	return len(p), nil
}

func (s *session) dialContext(dctx context.Context, network, addr string) (net.Conn, error) {
	dctx, cancel := context.WithCancel(dctx)
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()
	var c net.Conn
	var err error
	if s.a.dialHook != nil {
		c, err = s.a.dialHook(dctx, network, addr)
	} else {
		c, err = (&net.Dialer{}).DialContext(dctx, network, addr)
	}
	if err != nil {
		return nil, err
	}
	if !s.a.useTLS {
		if ta, ok := c.RemoteAddr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
			c.Close()
			s.setFatal(fmt.Errorf(`tls = "off" is for loopback only, and %s is %v`, addr, c.RemoteAddr()))
			return nil, errors.New("not a loopback address")
		}
	}
	select {
	case s.dialed <- c:
	default:
	}
	return c, nil
}

func (s *session) setFatal(err error) {
	s.mu.Lock()
	if s.fatal == nil {
		s.fatal = &fatalError{err}
	}
	s.mu.Unlock()
}

// callbacks registers what the session handles; ircevent adds its own
// (PING, CAP, SASL, nick fallback) at Connect.
func (s *session) callbacks() {
	c := s.conn
	c.AddCallback("CAP", s.onCap)
	c.AddCallback(ircevent.RPL_SASLSUCCESS, func(ircmsg.Message) {
		s.mu.Lock()
		s.saslOK = true
		s.mu.Unlock()
	})
	for _, code := range []string{ircevent.ERR_SASLFAIL, ircevent.ERR_SASLTOOLONG, ircevent.ERR_NICKLOCKED, ircevent.RPL_LOGGEDOUT} {
		c.AddCallback(code, func(m ircmsg.Message) {
			s.mu.Lock()
			s.saslRefused = m.Command + " " + lastParam(m)
			s.mu.Unlock()
		})
	}
	c.AddCallback(ircevent.ERR_ERRONEUSNICKNAME, func(m ircmsg.Message) {
		if c.CurrentNick() == "" && len(m.Params) > 1 && m.Params[1] == s.a.nick {
			s.setFatal(fmt.Errorf("the server refuses the nick %q: %s", s.a.nick, lastParam(m)))
			c.Reconnect() // ends this attempt now, not at the registration timeout
		}
	})
	c.AddConnectCallback(func(ircmsg.Message) {
		for _, list := range joinLists(s.a.rooms) {
			c.Join(list)
		}
	})
	for _, code := range []string{ircevent.ERR_NOSUCHCHANNEL, ircevent.ERR_TOOMANYCHANNELS, ircevent.ERR_CHANNELISFULL,
		ircevent.ERR_INVITEONLYCHAN, ircevent.ERR_BANNEDFROMCHAN, ircevent.ERR_BADCHANNELKEY, ircevent.ERR_NEEDREGGEDNICK} {
		c.AddCallback(code, func(m ircmsg.Message) {
			s.a.log.Warn("irc: cannot join a room", "reply", m.Command, "params", m.Params)
		})
	}
	c.AddCallback("KICK", func(m ircmsg.Message) {
		if len(m.Params) > 1 && foldEq(m.Params[1], c.CurrentNick()) {
			s.a.log.Warn("irc: kicked from a room", "room", m.Params[0], "by", m.Nick(), "reason", lastParam(m))
		}
	})
	c.AddCallback("PRIVMSG", s.onPrivmsg)
	c.AddCallback("NICK", s.onNick)
	s.whoisCallbacks()
	c.AddDisconnectCallback(func(ircmsg.Message) { s.gonce.Do(func() { close(s.gone) }) })
}

func (s *session) onCap(m ircmsg.Message) {
	if len(m.Params) < 3 || m.Params[1] != "LS" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capLS == nil {
		s.capLS = map[string]bool{}
	}
	for _, tok := range strings.Fields(lastParam(m)) {
		name, _, _ := strings.Cut(tok, "=")
		s.capLS[name] = true
	}
}

// session runs one connection until it ends, ctx ends or a Deliver fails.
// up is how long it was registered.
func (a *Adapter) session(ctx context.Context, deliver chat.Deliver) (up time.Duration, err error) {
	s := a.newSession(ctx)
	stopWatch := context.AfterFunc(ctx, func() {
		select {
		case c := <-s.dialed:
			c.Close() // Connect waits for the server; make it return now
		default:
		}
	})
	err = s.conn.Connect()
	stopWatch()
	if err != nil {
		return 0, s.connectError(err)
	}
	if err := s.checkSASL(); err != nil {
		s.teardown()
		return 0, err
	}
	start := time.Now()
	a.log.Info("irc connected", "server", a.dial, "nick", s.conn.CurrentNick(), "tls", a.useTLS)
	a.setLive(s)
	delivered := make(chan struct{})
	go func() { defer close(delivered); s.deliverLoop(deliver) }()
	select {
	case <-ctx.Done():
		err = ctx.Err()
	case <-s.gone:
		err = errors.New("the connection ended")
	case <-s.dropped:
		err = errors.New("a message was not taken (Deliver failed): dropped the connection")
	}
	a.setLive(nil)
	s.teardown()
	close(s.queue) // the reader has stopped: nothing sends on it any more
	<-delivered
	return time.Since(start), err
}

// connectError says what a failed Connect means: fatal for a refused
// login or nick, else a reason to retry.
func (s *session) connectError(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fatal != nil {
		return s.fatal
	}
	if s.saslRefused != "" {
		return fatalf("the server refused the SASL PLAIN login as %q (%s): check the account's credential (its password)",
			s.a.nick, s.saslRefused)
	}
	if s.a.cfg.Password != "" && s.capLS != nil && !s.capLS["sasl"] {
		return fatalf("the server does not offer SASL, but the account has a credential (password) set: " +
			"roster logs in to IRC with SASL PLAIN only; remove the credential or use a server with SASL")
	}
	return err
}

// checkSASL refuses a registration without the SASL login a password asks
// for (ircevent goes on without SASL when the server ignores CAP).
func (s *session) checkSASL() error {
	if s.a.cfg.Password == "" {
		return nil
	}
	s.mu.Lock()
	ok := s.saslOK
	s.mu.Unlock()
	if ok {
		return nil
	}
	return fatalf("the server registered the connection without a SASL login, but the account has a credential (password) set: " +
		"roster logs in to IRC with SASL PLAIN only; remove the credential or use a server with SASL")
}

// teardown quits politely, then forces the connection closed and waits
// for ircevent's goroutines to end.
func (s *session) teardown() {
	close(s.stop)
	s.conn.Quit()
	select {
	case <-s.gone:
	case <-time.After(2 * time.Second):
	}
	s.conn.Reconnect() // closes the connection if the server kept it open
	s.conn.Loop()      // with Quit called: waits for the goroutines and returns
}

// deliverLoop hands each queued message to deliver in order. After a
// failure the rest of this connection's messages are logged and dropped:
// IRC cannot send them again.
func (s *session) deliverLoop(deliver chat.Deliver) {
	failed := false
	for m := range s.queue {
		switch {
		case failed || s.ctx.Err() != nil:
			s.a.log.Error("irc: message lost (not delivered)", "chat", m.Chat, "from", m.From, "net_id", m.NetID)
		default:
			if err := deliver(s.ctx, m); err != nil {
				s.a.log.Error("irc: Deliver failed; the message is lost (IRC cannot resend) and the connection dropped",
					"chat", m.Chat, "from", m.From, "net_id", m.NetID, "err", err)
				failed = true
				close(s.dropped)
			}
		}
	}
}

// enqueue is called by the reader; it waits while the queue is full.
func (s *session) enqueue(m chat.Inbound) {
	select {
	case s.queue <- m:
	case <-s.stop:
		s.a.log.Error("irc: message lost (connection closing)", "chat", m.Chat, "from", m.From, "net_id", m.NetID)
	}
}

func lastParam(m ircmsg.Message) string {
	if len(m.Params) == 0 {
		return ""
	}
	return m.Params[len(m.Params)-1]
}

// joinLists packs rooms into "#a,#b,..." lists of at most 400 bytes: one
// JOIN line per list rather than one per room, which floods less.
func joinLists(rooms []string) []string {
	var out []string
	cur := ""
	for _, r := range rooms {
		if cur != "" && len(cur)+1+len(r) > 400 {
			out = append(out, cur)
			cur = ""
		}
		if cur != "" {
			cur += ","
		}
		cur += r
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}
