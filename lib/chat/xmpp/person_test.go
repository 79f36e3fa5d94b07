package xmpp

// The other side of the tests: a person's client built with mellium, and
// a recording Deliver.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/xml"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"mellium.im/sasl"
	"mellium.im/xmlstream"
	"mellium.im/xmpp"
	"mellium.im/xmpp/form"
	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/muc"
	"mellium.im/xmpp/stanza"

	"github.com/roster-sh/roster/lib/chat"
	"github.com/roster-sh/roster/lib/chat/chattest"
)

// wait is how long any one expected thing may take.
const wait = 15 * time.Second

type person struct {
	t      testing.TB
	s      *xmpp.Session
	me     jid.JID
	msgs   chan message
	selves chan string // rooms that sent us our own presence (status 110)
}

// dialPerson logs user in over STARTTLS, sends presence, and reads its
// messages until the test ends.
func dialPerson(t testing.TB, p *chattest.Prosody, user, pass string) *person {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	me := jid.MustParse(user + "@" + p.Domain)
	pem, err := os.ReadFile(p.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	var d net.Dialer
	tcp, err := d.DialContext(ctx, "tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	raw := deadlineConn{tcp}
	s, err := negotiate(ctx, raw, raw, me, 0, []xmpp.StreamFeature{
		xmpp.StartTLS(&tls.Config{ServerName: p.Domain, RootCAs: pool}),
		xmpp.SASL("", pass, sasl.ScramSha1, sasl.Plain),
		xmpp.BindResource(),
	})
	if err != nil {
		raw.Close()
		t.Fatalf("person %s: login: %v", user, err)
	}
	pr := &person{t: t, s: s, me: me, msgs: make(chan message, 1000), selves: make(chan string, 100)}
	go s.Serve(xmpp.HandlerFunc(pr.handle))
	t.Cleanup(func() { s.Close(); raw.Close() })
	if err := s.Send(context.Background(), stanza.Presence{}.Wrap(nil)); err != nil {
		t.Fatal(err)
	}
	return pr
}

func (pr *person) handle(t xmlstream.TokenReadEncoder, start *xml.StartElement) error {
	el := xmlstream.MultiReader(xmlstream.Token(*start), t)
	switch start.Name.Local {
	case "message":
		var m message
		if err := xml.NewTokenDecoder(el).Decode(&m); err == nil && len(m.Bodies) > 0 {
			pr.msgs <- m
		}
	case "presence":
		var p presence
		xml.NewTokenDecoder(el).Decode(&p)
		for _, x := range p.MUCUser {
			for _, st := range x.Status {
				if from, err := jid.Parse(p.From); err == nil && st.Code == 110 && p.Type == "" {
					pr.selves <- from.Bare().String()
				}
			}
		}
	}
	return nil
}

// dm sends a chat message and returns its id.
func (pr *person) dm(to, text string) string {
	pr.t.Helper()
	return pr.send(to, text, stanza.ChatMessage)
}

func (pr *person) say(room, text string) string {
	pr.t.Helper()
	return pr.send(room, text, stanza.GroupChatMessage)
}

func (pr *person) send(to, text string, typ stanza.MessageType) string {
	pr.t.Helper()
	id := randomID()
	msg := stanza.Message{ID: id, To: jid.MustParse(to), Type: typ}
	body := xmlstream.Wrap(xmlstream.Token(xml.CharData(text)), xml.StartElement{Name: xml.Name{Local: "body"}})
	if err := pr.s.Send(context.Background(), msg.Wrap(body)); err != nil {
		pr.t.Fatalf("person %s: send: %v", pr.me, err)
	}
	return id
}

// join enters room (making it if new) as nick.
func (pr *person) join(room, nick string) {
	pr.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	x := xmlstream.Wrap(nil, xml.StartElement{Name: xml.Name{Space: muc.NS, Local: "x"}})
	if err := pr.s.Send(context.Background(), stanza.Presence{To: jid.MustParse(room + "/" + nick)}.Wrap(x)); err != nil {
		pr.t.Fatalf("person %s: join %s: %v", pr.me, room, err)
	}
	for {
		select {
		case r := <-pr.selves:
			if r == room {
				return
			}
		case <-ctx.Done():
			pr.t.Fatalf("person %s: join %s: no self-presence in %s", pr.me, room, wait)
		}
	}
}

// hideJIDs makes room semi-anonymous (real JIDs for moderators only),
// through the owner's config form.
func (pr *person) hideJIDs(room string) {
	pr.t.Helper()
	r := jid.MustParse(room)
	var f *form.Data
	err := pr.within(func(bg context.Context) (err error) { f, err = muc.GetConfig(bg, r, pr.s); return err })
	if err != nil {
		pr.t.Fatalf("room config form: %v", err)
	}
	if _, err := f.Set("muc#roomconfig_whois", "moderators"); err != nil {
		pr.t.Fatalf("room config whois: %v", err)
	}
	if err := pr.within(func(bg context.Context) error { return muc.SetConfig(bg, r, f, pr.s) }); err != nil {
		pr.t.Fatalf("room config submit: %v", err)
	}
}

// next is the next message with a body that pred accepts.
func (pr *person) next(pred func(message) bool) message {
	pr.t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case m := <-pr.msgs:
			if pred(m) {
				return m
			}
		case <-timeout:
			pr.t.Fatalf("person %s: no expected message in %s", pr.me, wait)
		}
	}
}

// recorder is a Deliver that keeps what it took, and fails when fail says.
type recorder struct {
	mu   sync.Mutex
	got  []chat.Inbound // taken
	seen []chat.Inbound // offered, taken or not
	fail func(chat.Inbound) error
	kick chan struct{}
}

func newRecorder() *recorder { return &recorder{kick: make(chan struct{}, 1)} }

func (r *recorder) deliver(ctx context.Context, m chat.Inbound) error {
	r.mu.Lock()
	defer func() {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}()
	defer r.mu.Unlock()
	r.seen = append(r.seen, m)
	if r.fail != nil {
		if err := r.fail(m); err != nil {
			return err
		}
	}
	r.got = append(r.got, m)
	return nil
}

// waitFor waits until pred holds of what was taken.
func (r *recorder) waitFor(t testing.TB, what string, pred func(got []chat.Inbound) bool) []chat.Inbound {
	t.Helper()
	timeout := time.After(wait)
	for {
		r.mu.Lock()
		got := append([]chat.Inbound(nil), r.got...)
		r.mu.Unlock()
		if pred(got) {
			return got
		}
		select {
		case <-r.kick:
		case <-time.After(50 * time.Millisecond):
		case <-timeout:
			t.Fatalf("%s: not within %s; taken: %+v", what, wait, got)
		}
	}
}

func withText(got []chat.Inbound, text string) []chat.Inbound {
	var out []chat.Inbound
	for _, m := range got {
		if m.Text == text {
			out = append(out, m)
		}
	}
	return out
}

// running is an adapter's Run in the background.
type running struct {
	a    *Adapter
	stop context.CancelFunc
	done chan error
}

func startAdapter(t testing.TB, cfg chat.Config, deliver chat.Deliver) *running {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{a: a, stop: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx, deliver) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(wait):
			t.Errorf("Run did not return %s after its context ended", wait)
		}
	})
	return r
}

// waitLive waits until the adapter has a session and is in rooms.
func (r *running) waitLive(t testing.TB, rooms ...string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		r.a.mu.Lock()
		c := r.a.live
		r.a.mu.Unlock()
		ok := c != nil
		for _, room := range rooms {
			ok = ok && c.isJoined(jid.MustParse(room))
		}
		if ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the adapter is not connected (and in %v) after %s", rooms, wait)
}

// waitMark waits until archive's catch-up mark is id (the mark moves
// just after Deliver returns).
func (r *running) waitMark(t testing.TB, archive, id string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for r.a.getMark(archive).id != id {
		if time.Now().After(deadline) {
			t.Fatalf("catch-up mark of %q is %q; want the delivered stanza-id %q", archive, r.a.getMark(archive).id, id)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (r *running) waitDown(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		r.a.mu.Lock()
		c := r.a.live
		r.a.mu.Unlock()
		if c == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the adapter still has a session after %s", wait)
}

func accountConfig(p *chattest.Prosody, user, pass string, chats ...string) chat.Config {
	return chat.Config{
		Account: "team", Protocol: "xmpp", Address: user + "@" + p.Domain,
		Server: p.Addr, TLS: "starttls", CAFile: p.CAFile, Password: pass,
		Chats: chats, Log: testLogger(),
	}
}

var errNotNow = errors.New("not now")

// testLogger logs the adapter at debug level to stderr when
// ROSTER_TEST_LOG is set; otherwise nowhere.
func testLogger() *slog.Logger {
	if os.Getenv("ROSTER_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// within runs a mellium request under a context that is never cancelled
// (see deadlineConn), failing after wait.
func (pr *person) within(f func(context.Context) error) error {
	done := make(chan error, 1)
	go func() { done <- f(context.Background()) }()
	select {
	case err := <-done:
		return err
	case <-time.After(wait):
		return fmt.Errorf("no answer in %s", wait)
	}
}

// kick removes nick from room (the person must be a moderator).
func (pr *person) kick(room, nick string) {
	pr.t.Helper()
	item := xmlstream.Wrap(nil, xml.StartElement{Name: xml.Name{Local: "item"}, Attr: []xml.Attr{
		{Name: xml.Name{Local: "nick"}, Value: nick}, {Name: xml.Name{Local: "role"}, Value: "none"},
	}})
	query := xmlstream.Wrap(item, xml.StartElement{Name: xml.Name{Space: muc.NSAdmin, Local: "query"}})
	err := pr.within(func(bg context.Context) error {
		return pr.s.UnmarshalIQElement(bg, query, stanza.IQ{Type: stanza.SetIQ, To: jid.MustParse(room)}, nil)
	})
	if err != nil {
		pr.t.Fatalf("kick %s from %s: %v", nick, room, err)
	}
}
