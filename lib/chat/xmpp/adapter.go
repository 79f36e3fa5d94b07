package xmpp

import (
	"context"
	"crypto/tls"
	"encoding/xml"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"mellium.im/xmlstream"
	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"

	"github.com/roster-sh/roster/lib/chat"
	"github.com/roster-sh/roster/lib/errs"
)

// Errors of the adapter, for errors.Is.
var (
	// ErrLoginRefused: the server refused the account's credential; Run
	// returns it (wrapped) instead of retrying.
	ErrLoginRefused = errors.New("the server refused the credential")
	// ErrNotConnected: Send was called while there is no session (or the
	// room is not joined); the caller retries later.
	ErrNotConnected = errors.New("not connected")
)

// Reconnect backoff: doubling from backoffMin to backoffMax, back to
// backoffMin after a session that lasted stableAfter.
var (
	backoffMin = time.Second
	backoffMax = 60 * time.Second
)

// fatalError is a failure retrying cannot fix: Run returns it.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

// Adapter is one XMPP account's connection (chat.Adapter).
type Adapter struct {
	cfg  chat.Config
	log  *slog.Logger
	me   jid.JID // bare
	nick string
	addr string // host:port dialled
	mode string // tlsRequire, tlsStartTLS or tlsOff
	tls  *tls.Config

	mu      sync.Mutex
	running bool
	live    *conn           // the session Send uses, nil between sessions
	rooms   map[string]bool // chats known to be rooms (disco said so once)
	marks   map[string]mark // catch-up marks: "" our archive, else a room's
	everUp  bool            // a session has been ready: the next one catches up
	started time.Time
}

var _ chat.Adapter = (*Adapter)(nil)

// New checks cfg and makes the adapter; it does not connect.
func New(cfg chat.Config) (*Adapter, error) {
	bad := func(format string, args ...any) error {
		return errs.New(errs.ErrUsage, fmt.Sprintf("xmpp account %s: ", cfg.Account)+fmt.Sprintf(format, args...))
	}
	me, err := jid.Parse(cfg.Address)
	if err != nil || me.Localpart() == "" {
		return nil, bad("address %q is not a JID like name@example.org", cfg.Address)
	}
	a := &Adapter{
		cfg: cfg, log: cfg.Log, me: me.Bare(), nick: me.Localpart(), mode: cfg.TLS,
		rooms: map[string]bool{}, marks: map[string]mark{},
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.log = a.log.With("account", cfg.Account, "protocol", "xmpp")
	if a.mode == "" {
		a.mode = tlsRequire
	}
	if a.mode != tlsRequire && a.mode != tlsStartTLS && a.mode != tlsOff {
		return nil, bad("tls = %q: say \"require\", \"starttls\" or \"off\"", cfg.TLS)
	}
	if cfg.Password == "" {
		return nil, bad("no credential (the password is empty)")
	}
	if a.addr, err = serverAddr(cfg.Server, me.Domainpart(), a.mode); err != nil {
		return nil, bad("%v", err)
	}
	if a.mode == tlsOff {
		if a.addr, err = loopbackOnly(a.addr); err != nil {
			return nil, bad("%v", err)
		}
	}
	if a.tls, err = tlsConfig(me.Domainpart(), cfg.CAFile); err != nil {
		return nil, bad("%v", err)
	}
	return a, nil
}

// Nick is the name the account has in rooms: its JID's localpart.
func (a *Adapter) Nick() string { return a.nick }

// Run connects and reconnects until ctx ends or the account cannot work.
func (a *Adapter) Run(ctx context.Context, deliver chat.Deliver) error {
	a.mu.Lock()
	if a.running {
		a.mu.Unlock()
		return errors.New("xmpp: Run is already running for this adapter")
	}
	a.running, a.started = true, time.Now()
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.running = false
		a.mu.Unlock()
	}()
	wait := backoffMin
	for {
		up, err := a.session(ctx, deliver)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var fatal *fatalError
		if errors.As(err, &fatal) {
			a.log.Error("the account cannot work", "err", err)
			return fmt.Errorf("xmpp account %s (%s): %w", a.cfg.Account, a.me, err)
		}
		if up >= stableAfter {
			wait = backoffMin
		}
		// ±20% so that many accounts do not reconnect in step.
		sleep := time.Duration(float64(wait) * (0.8 + 0.4*rand.Float64()))
		a.log.Warn("disconnected; reconnecting", "in", sleep.Round(time.Millisecond), "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(sleep):
		}
		wait = min(wait*2, backoffMax)
	}
}

// session is one connection, from the dial to its end.
func (a *Adapter) session(ctx context.Context, deliver chat.Deliver) (time.Duration, error) {
	s, raw, err := a.dial(ctx)
	if err != nil {
		return 0, err
	}
	a.mu.Lock()
	catchUp := a.everUp
	a.mu.Unlock()
	c := newConn(a, s, raw, deliver, ctx, catchUp)
	return c.run(ctx)
}

func (a *Adapter) setLive(c *conn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-c.dead:
		return
	default:
	}
	a.live, a.everUp = c, true
}

func (a *Adapter) clearLive(c *conn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.live == c {
		a.live = nil
	}
}

func (a *Adapter) knownRoom(room jid.JID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rooms[room.String()]
}

// knownRooms are the configured chats known to be rooms.
func (a *Adapter) knownRooms() []jid.JID {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []jid.JID
	for _, chat := range a.cfg.Chats {
		if j, err := jid.Parse(chat); err == nil && a.rooms[j.Bare().String()] {
			out = append(out, j.Bare())
		}
	}
	return out
}

func (a *Adapter) noteRoom(room jid.JID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rooms[room.String()] = true
}

func (a *Adapter) getMark(archive string) mark {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.marks[archive]
}

func (a *Adapter) setMark(archive string, m mark) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.marks[archive] = m
}

// Send sends text to chat: a bare JID, a room among the configured chats
// (type groupchat, once joined) or anyone else (type chat). Each message
// carries an id and the same origin-id (XEP-0359); the first one is the
// network id returned.
func (a *Adapter) Send(ctx context.Context, chatAddr, text string) (string, error) {
	to, err := jid.Parse(chatAddr)
	if err != nil || to.Localpart() == "" || to.Resourcepart() != "" {
		return "", errs.New(errs.ErrUsage, fmt.Sprintf("xmpp: %q is not a bare JID (name@example.org) to send to", chatAddr))
	}
	parts := splitText(cleanText(text), maxBody)
	if len(parts) == 0 {
		return "", errs.New(errs.ErrUsage, "xmpp: nothing to send (the text is empty once control characters are removed)")
	}
	a.mu.Lock()
	c, isRoom := a.live, a.rooms[to.String()]
	a.mu.Unlock()
	if c == nil {
		return "", fmt.Errorf("xmpp account %s: %w", a.cfg.Account, ErrNotConnected)
	}
	typ := stanza.ChatMessage
	if isRoom {
		if !c.isJoined(to) {
			return "", fmt.Errorf("xmpp account %s: room %s is not joined yet: %w", a.cfg.Account, to, ErrNotConnected)
		}
		typ = stanza.GroupChatMessage
	}
	var first string
	for _, part := range parts {
		id := randomID()
		msg := stanza.Message{ID: id, To: to, Type: typ}
		payload := xmlstream.MultiReader(
			xmlstream.Wrap(xmlstream.Token(xml.CharData(part)), xml.StartElement{Name: xml.Name{Local: "body"}}),
			stanza.OriginID{ID: id}.TokenReader(),
		)
		if err := c.send(ctx, msg.Wrap(payload)); err != nil {
			c.killFor(fmt.Errorf("a send failed: %w", err)) // a half-written stanza leaves the stream unusable
			return first, fmt.Errorf("xmpp account %s: send to %s: %w", a.cfg.Account, to, err)
		}
		if first == "" {
			first = id
		}
	}
	a.log.Debug("sent", "chat", to.String(), "net_id", first, "parts", len(parts))
	return first, nil
}
