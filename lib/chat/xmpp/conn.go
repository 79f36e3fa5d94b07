package xmpp

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"mellium.im/xmlstream"
	"mellium.im/xmpp"
	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/ping"
	"mellium.im/xmpp/stanza"

	"github.com/roster-sh/roster/lib/chat"
)

// Timings of a connection; variables so that tests can shorten them.
var (
	pingEvery   = 60 * time.Second // a ping to the server to find a dead TCP connection
	iqTimeout   = 20 * time.Second // any request of ours
	closeGrace  = 2 * time.Second  // for the server to close its stream after ours
	stableAfter = 60 * time.Second // a session this old resets the reconnect backoff
)

// errClosed is a request cut short by the end of its connection.
var errClosed = errors.New("the connection closed")

// conn is one XMPP session, from the dial to its end; Run makes one per
// connection. The read loop (mellium's Serve) calls handle for every
// top-level element, one at a time, in the server's order: delivery and
// the stream management count happen there, so that the count is of
// stanzas really handled. Requests of ours are matched to their answers
// in handle too (pending), never by mellium's own IQ tracking, whose
// answers bypass the handler and so would go uncounted.
type conn struct {
	a       *Adapter
	log     *slog.Logger
	s       *xmpp.Session
	raw     net.Conn // closed to end the session at once
	deliver chat.Deliver
	ctx     context.Context // Run's: what deliver gets

	dead     chan struct{} // closed when the read loop has returned
	killOnce sync.Once
	cause    atomic.Pointer[error] // why we ended it, when we did

	smOn atomic.Bool   // <enabled/> seen: h counts from there
	h    atomic.Uint32 // stanzas handled since <enabled/> (XEP-0198 wraps at 2^32)

	mu      sync.Mutex
	pending map[string]*pendingIQ
	view    view            // rooms, occupants, running archive queries
	joined  map[string]bool // rooms whose self-presence we have
	// catching: this session catches up (it follows another). held: the
	// archives whose mark stays where it is until their catch-up is done,
	// since live messages (the offline store's among them) may come
	// before older ones still in the archive.
	catching  bool
	held      map[string]bool
	rejoining atomic.Bool
	joining   map[string]chan error // room -> its join, waiting for our presence there
}

type pendingIQ struct {
	to     jid.JID
	decode func(*xml.Decoder) error // reads a result IQ; nil: ignore its payload
	done   chan error
	// mu is held while decode runs (in the read loop); a request that
	// gives up sets abandoned under it, so decode never writes into what
	// its caller has stopped owning.
	mu        sync.Mutex
	abandoned bool
}

func newConn(a *Adapter, s *xmpp.Session, raw net.Conn, deliver chat.Deliver, ctx context.Context, catchUp bool) *conn {
	return &conn{
		a: a, log: a.log, s: s, raw: raw, deliver: deliver, ctx: ctx,
		dead:     make(chan struct{}),
		pending:  map[string]*pendingIQ{},
		view:     view{me: a.me, rooms: map[string]*roomView{}, known: map[string]bool{}, queries: map[string]string{}},
		joined:   map[string]bool{},
		catching: catchUp,
		held:     map[string]bool{"": catchUp},
		joining:  map[string]chan error{},
	}
}

// kill ends the connection now, without a goodbye: what was not
// acknowledged stays the server's to send again.
func (c *conn) kill() {
	c.killOnce.Do(func() { c.raw.Close() })
}

// killFor is kill with the reason run reports.
func (c *conn) killFor(err error) {
	c.cause.CompareAndSwap(nil, &err)
	c.kill()
}

// run serves the session until it ends or ctx does; up is how long it was
// ready (zero if never).
func (c *conn) run(runCtx context.Context) (up time.Duration, err error) {
	// ctx is the session's: what setup, pings and rejoins run under.
	ctx, cancel := context.WithCancel(runCtx)
	defer cancel()
	served := make(chan error, 1)
	go func() {
		err := c.s.Serve(xmpp.HandlerFunc(c.handle))
		close(c.dead)
		served <- err
	}()
	began := time.Now()
	setupDone := make(chan error, 1)
	go func() { setupDone <- c.setup(ctx) }()
	tick := time.NewTicker(pingEvery)
	defer tick.Stop()
	finish := func(e error) (time.Duration, error) {
		cancel()
		c.kill()
		<-served
		if setupDone != nil {
			<-setupDone
		}
		c.a.clearLive(c)
		return time.Since(began), e
	}
	for {
		select {
		case err := <-served:
			served <- err
			if cause := c.cause.Load(); cause != nil {
				return finish(*cause)
			}
			if err == nil || errors.Is(err, net.ErrClosed) {
				err = io.EOF
			}
			return finish(fmt.Errorf("connection lost: %w", err))
		case err := <-setupDone:
			setupDone = nil
			if err != nil && runCtx.Err() == nil {
				return finish(err)
			}
		case <-tick.C:
			if err := c.ping(ctx); err != nil && ctx.Err() == nil {
				return finish(fmt.Errorf("the server did not answer a ping: %w", err))
			}
			if setupDone == nil && c.rejoining.CompareAndSwap(false, true) {
				go c.rejoin(ctx)
			}
		case <-runCtx.Done():
			c.goodbye()
			select {
			case err := <-served:
				served <- err
			case <-time.After(closeGrace):
			}
			return finish(runCtx.Err())
		}
	}
}

// setup does what a new session needs before and after it is usable:
// stream management, presence, the rooms, and (after a reconnect) the
// catch-up of what was missed.
func (c *conn) setup(ctx context.Context) error {
	if _, ok := c.s.Feature(nsSM); ok {
		enable := xml.StartElement{Name: xml.Name{Space: nsSM, Local: "enable"}}
		if err := c.send(ctx, xmlstream.Wrap(nil, enable)); err != nil {
			return fmt.Errorf("enable stream management: %w", err)
		}
	} else {
		c.log.Warn("the server offers no stream management (XEP-0198); acknowledgement is by catch-up only")
	}
	if err := c.send(ctx, stanza.Presence{}.Wrap(nil)); err != nil {
		return fmt.Errorf("presence: %w", err)
	}
	c.a.setLive(c)
	c.log.Info("connected", "jid", c.s.LocalAddr().String())
	rooms := c.joinRooms(ctx)
	if !c.catching {
		return nil
	}
	if err := c.catchUp(ctx, "", jid.JID{}); err != nil {
		return err
	}
	for _, room := range rooms {
		if err := c.catchUp(ctx, room.String(), room); err != nil {
			return err
		}
	}
	return nil
}

// goodbye is the clean end of a session: our count, then our stream's end.
func (c *conn) goodbye() {
	ctx, cancel := context.WithTimeout(context.Background(), closeGrace)
	defer cancel()
	if c.smOn.Load() {
		c.send(ctx, ackElement(c.h.Load()))
	}
	done := make(chan struct{})
	go func() { c.s.Close(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// send writes one element; the write is bounded by deadlineConn, never
// by ctx (see deadlineConn for why).
func (c *conn) send(ctx context.Context, r xml.TokenReader) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.s.Send(context.Background(), r)
}

func (c *conn) ping(ctx context.Context) error {
	payload := xmlstream.Wrap(nil, xml.StartElement{Name: xml.Name{Space: ping.NS, Local: "ping"}})
	err := c.request(ctx, stanza.IQ{Type: stanza.GetIQ, To: c.a.me.Domain()}, payload, nil)
	var se stanza.Error
	if errors.As(err, &se) {
		return nil // an error answer is an answer
	}
	return err
}

// request sends an IQ and waits for its answer: nil for a result (after
// decode read it), the stanza.Error of an error answer, or why there was
// none.
func (c *conn) request(ctx context.Context, iq stanza.IQ, payload xml.TokenReader, decode func(*xml.Decoder) error) error {
	iq.ID = randomID()
	p := &pendingIQ{to: iq.To, decode: decode, done: make(chan error, 1)}
	c.mu.Lock()
	c.pending[iq.ID] = p
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, iq.ID)
		c.mu.Unlock()
	}()
	if err := c.send(ctx, iq.Wrap(payload)); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, iqTimeout)
	defer cancel()
	var err error
	select {
	case err = <-p.done:
		return err
	case <-ctx.Done():
		err = ctx.Err()
	case <-c.dead:
		err = errClosed
	}
	p.mu.Lock()
	p.abandoned = true
	p.mu.Unlock()
	return err
}

// handle is the read loop's handler: every top-level element, in order.
// A stanza is counted once handled; a message once delivered (or
// deliberately skipped). A delivery error ends the connection with the
// message uncounted.
func (c *conn) handle(t xmlstream.TokenReadEncoder, start *xml.StartElement) error {
	if start.Name.Space == nsSM {
		return c.handleSM(t, start)
	}
	if !stanza.Is(start.Name, stanza.NSClient) {
		return nil // not a stanza: not counted
	}
	el := xmlstream.MultiReader(xmlstream.Token(*start), t)
	switch start.Name.Local {
	case "message":
		delivered, err := c.handleMessage(el)
		if err != nil {
			return err
		}
		c.count()
		if delivered && c.smOn.Load() {
			// Unasked: the server may forget the message now.
			_, err = xmlstream.Copy(t, ackElement(c.h.Load()))
		}
		return err
	case "presence":
		c.handlePresence(el)
	case "iq":
		if err := c.handleIQ(t, start, el); err != nil {
			return err
		}
	}
	c.count()
	return nil
}

func (c *conn) count() {
	if c.smOn.Load() {
		c.h.Add(1)
	}
}

func ackElement(h uint32) xml.TokenReader {
	return xmlstream.Wrap(nil, xml.StartElement{
		Name: xml.Name{Space: nsSM, Local: "a"},
		Attr: []xml.Attr{{Name: xml.Name{Local: "h"}, Value: strconv.FormatUint(uint64(h), 10)}},
	})
}

func (c *conn) handleSM(t xmlstream.TokenReadEncoder, start *xml.StartElement) error {
	switch start.Name.Local {
	case "enabled":
		c.h.Store(0)
		c.smOn.Store(true)
		c.log.Debug("stream management enabled")
	case "failed":
		c.smOn.Store(false)
		c.log.Warn("the server refused stream management; acknowledgement is by catch-up only")
	case "r":
		if c.smOn.Load() {
			_, err := xmlstream.Copy(t, ackElement(c.h.Load()))
			return err
		}
	}
	return nil
}

// handleMessage delivers one message, or skips it; it reports whether it
// delivered, and an error only when delivery failed (the connection is
// then dead).
func (c *conn) handleMessage(el xml.TokenReader) (bool, error) {
	var m message
	if err := xml.NewTokenDecoder(el).Decode(&m); err != nil {
		c.log.Debug("unreadable message skipped", "err", err)
		return false, nil
	}
	c.mu.Lock()
	cl := classify(&c.view, &m)
	c.mu.Unlock()
	if !cl.ok {
		c.log.Debug("message skipped", "why", cl.why, "from", m.From)
		c.advance(cl)
		return false, nil
	}
	if err := c.deliver(c.ctx, cl.in); err != nil {
		c.log.Warn("a message was not taken; not acknowledging it, reconnecting", "chat", cl.in.Chat, "net_id", cl.in.NetID, "err", err)
		err = fmt.Errorf("a message was not taken, so the connection was dropped for the server to send it again: %w", err)
		c.killFor(err)
		return false, err
	}
	c.log.Debug("delivered", "chat", cl.in.Chat, "from", cl.in.From, "net_id", cl.in.NetID, "history", cl.in.History)
	c.advance(cl)
	return true, nil
}

// advance moves the catch-up mark of the message's archive past it: an
// archive result always (results come in order), a live message only
// once its archive is caught up (else catch-up could start after
// messages it has not yet delivered).
func (c *conn) advance(cl classified) {
	if cl.mark == "" {
		return
	}
	c.mu.Lock()
	hold := c.held[cl.archive]
	c.mu.Unlock()
	if hold && !cl.catchup {
		return
	}
	at := cl.in.At
	if at.IsZero() {
		at = time.Now()
	}
	c.a.setMark(cl.archive, mark{id: cl.mark, at: at})
}

func (c *conn) handleIQ(t xmlstream.TokenReadEncoder, start *xml.StartElement, el xml.TokenReader) error {
	iq, err := stanza.NewIQ(*start)
	if err != nil {
		return nil
	}
	switch iq.Type {
	case stanza.ResultIQ, stanza.ErrorIQ:
		c.answer(iq, el)
		return nil
	}
	d := xml.NewTokenDecoder(el)
	d.Token() // the iq itself
	for {
		tok, err := d.Token()
		if err != nil {
			return nil
		}
		if se, ok := tok.(xml.StartElement); ok {
			ours := iq.From.Equal(jid.JID{}) || iq.From.Equal(c.a.me) || iq.From.Equal(c.a.me.Domain())
			isPing := iq.Type == stanza.GetIQ && se.Name == xml.Name{Space: ping.NS, Local: "ping"}
			isPush := iq.Type == stanza.SetIQ && se.Name.Space == "jabber:iq:roster" && ours
			if isPing || isPush {
				_, err := xmlstream.Copy(t, iq.Result(nil))
				return err
			}
			return nil // mellium answers service-unavailable
		}
	}
}

// answer hands an IQ answer to the request waiting for it, if it came
// from where the request went.
func (c *conn) answer(iq stanza.IQ, el xml.TokenReader) {
	c.mu.Lock()
	p := c.pending[iq.ID]
	if p != nil && !c.answeredBy(p.to, iq.From) {
		p = nil
	}
	if p != nil {
		delete(c.pending, iq.ID)
	}
	c.mu.Unlock()
	if p == nil {
		return
	}
	d := xml.NewTokenDecoder(el)
	if iq.Type == stanza.ErrorIQ {
		var e struct {
			Err stanza.Error `xml:"error"`
		}
		if err := d.Decode(&e); err != nil {
			p.done <- err
			return
		}
		p.done <- e.Err
		return
	}
	if p.decode == nil {
		p.done <- nil
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.abandoned {
		p.done <- p.decode(d)
	}
}

func (c *conn) answeredBy(to, from jid.JID) bool {
	if to.Equal(jid.JID{}) || to.Equal(c.a.me) {
		return from.Equal(jid.JID{}) || from.Equal(c.a.me) || from.Equal(c.a.me.Domain())
	}
	return from.Equal(to)
}
