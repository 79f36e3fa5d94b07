package xmpp

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"mellium.im/xmpp/jid"
)

const room = "ops@rooms.localhost"

func testView() *view {
	return &view{
		me: jid.MustParse("dobby@localhost"),
		rooms: map[string]*roomView{room: {nick: "dobby", occupants: map[string]string{
			"Alice": "alice@localhost/phone", "Anon": "",
		}}},
		known:   map[string]bool{room: true, "closed@rooms.localhost": true},
		queries: map[string]string{"q-own": "", "q-room": room},
	}
}

func decodeMessage(data []byte) (*message, error) {
	var m message
	d := xml.NewDecoder(strings.NewReader(string(data)))
	d.DefaultSpace = "jabber:client"
	return &m, d.Decode(&m)
}

func TestClassifyTrustsOnlyWhatTheServerStamps(t *testing.T) {
	for _, tc := range []struct {
		name, xml string
		ok        bool
		from      string
		verified  bool
		netID     string
		history   bool
		mark      string
	}{
		{name: "DM with our stanza-id", ok: true, from: "alice@localhost", verified: true, netID: "S1", mark: "S1",
			xml: `<message from="alice@localhost/phone" type="chat" id="m1"><body>hi</body><stanza-id xmlns="urn:xmpp:sid:0" by="mallory@localhost" id="FORGED"/><stanza-id xmlns="urn:xmpp:sid:0" by="dobby@localhost" id="S1"/></message>`},
		{name: "DM stamped by someone else only: the message id", ok: true, from: "alice@localhost", verified: true, netID: "m1",
			xml: `<message from="alice@localhost/phone" type="chat" id="m1"><body>hi</body><stanza-id xmlns="urn:xmpp:sid:0" by="mallory@localhost" id="FORGED"/></message>`},
		{name: "error message", xml: `<message from="alice@localhost" type="error"><body>hi</body></message>`},
		{name: "carbon", xml: `<message from="dobby@localhost" type="chat"><received xmlns="urn:xmpp:carbons:2"/><body>hi</body></message>`},
		{name: "no body", xml: `<message from="alice@localhost" type="chat"><active xmlns="http://jabber.org/protocol/chatstates"/></message>`},
		{name: "blank body", xml: `<message from="alice@localhost" type="chat"><body> 
 </body></message>`},
		{name: "no from (our own account)", xml: `<message type="chat"><body>hi</body></message>`},
		{name: "another resource of ours", xml: `<message from="dobby@localhost/laptop" type="chat"><body>hi</body></message>`},
		{name: "groupchat from a room we are not in", xml: `<message from="x@rooms.localhost/Alice" type="groupchat"><body>hi</body></message>`},
		{name: "message from a room we are out of", xml: `<message from="closed@rooms.localhost/Alice" type="chat"><body>hi</body></message>`},
		{name: "private message from an occupant", xml: `<message from="ops@rooms.localhost/Alice" type="chat"><body>hi</body></message>`},
		{name: "room occupant with a real JID", ok: true, from: "alice@localhost", verified: true, netID: "R1", mark: "R1",
			xml: `<message from="ops@rooms.localhost/Alice" type="groupchat" id="m2"><body>hi</body><stanza-id xmlns="urn:xmpp:sid:0" by="ops@rooms.localhost" id="R1"/></message>`},
		{name: "room occupant forging an item: the presence decides", ok: true, from: "~ops@rooms.localhost/Anon", netID: "m3",
			xml: `<message from="ops@rooms.localhost/Anon" type="groupchat" id="m3"><body>hi</body><x xmlns="http://jabber.org/protocol/muc#user"><item jid="owner@localhost"/></x></message>`},
		{name: "room occupant never seen", ok: true, from: "~ops@rooms.localhost/Bob", netID: "m4",
			xml: `<message from="ops@rooms.localhost/Bob" type="groupchat" id="m4"><body>hi</body></message>`},
		{name: "our own echo", mark: "R2",
			xml: `<message from="ops@rooms.localhost/dobby" type="groupchat"><body>hi</body><stanza-id xmlns="urn:xmpp:sid:0" by="ops@rooms.localhost" id="R2"/></message>`},
		{name: "room subject", xml: `<message from="ops@rooms.localhost" type="groupchat"><subject>x</subject></message>`},
		{name: "room history with the room's item", ok: true, from: "alice@localhost", verified: true, history: true, netID: "m5",
			xml: `<message from="ops@rooms.localhost/Al" type="groupchat" id="m5"><body>old</body><delay xmlns="urn:xmpp:delay" from="ops@rooms.localhost" stamp="2024-01-02T03:04:05Z"/><x xmlns="http://jabber.org/protocol/muc#user"><item jid="alice@localhost"/></x></message>`},
		{name: "room history with a forged item too", ok: true, from: "~ops@rooms.localhost/Al", history: true, netID: "m6",
			xml: `<message from="ops@rooms.localhost/Al" type="groupchat" id="m6"><body>old</body><x xmlns="http://jabber.org/protocol/muc#user"><item jid="owner@localhost"/></x><delay xmlns="urn:xmpp:delay" from="ops@rooms.localhost" stamp="2024-01-02T03:04:05Z"/><x xmlns="http://jabber.org/protocol/muc#user"><item jid="alice@localhost"/></x></message>`},
		{name: "our archive", ok: true, from: "alice@localhost", verified: true, history: true, netID: "A1", mark: "A1",
			xml: `<message><result xmlns="urn:xmpp:mam:2" queryid="q-own" id="A1"><forwarded xmlns="urn:xmpp:forward:0"><delay xmlns="urn:xmpp:delay" stamp="2024-01-02T03:04:05Z"/><message xmlns="jabber:client" from="alice@localhost/phone" to="dobby@localhost" type="chat"><body>missed</body></message></forwarded></result></message>`},
		{name: "archive result of no query of ours",
			xml: `<message from="alice@localhost"><result xmlns="urn:xmpp:mam:2" queryid="q-evil" id="A1"><forwarded xmlns="urn:xmpp:forward:0"><message xmlns="jabber:client" from="owner@localhost" type="chat"><body>obey</body></message></forwarded></result></message>`},
		{name: "archive result for our query from someone else",
			xml: `<message from="mallory@localhost"><result xmlns="urn:xmpp:mam:2" queryid="q-own" id="A1"><forwarded xmlns="urn:xmpp:forward:0"><message xmlns="jabber:client" from="owner@localhost" type="chat"><body>obey</body></message></forwarded></result></message>`},
		{name: "our own sent message in our archive", mark: "A2",
			xml: `<message><result xmlns="urn:xmpp:mam:2" queryid="q-own" id="A2"><forwarded xmlns="urn:xmpp:forward:0"><message xmlns="jabber:client" from="dobby@localhost/x" to="alice@localhost" type="chat"><body>mine</body></message></forwarded></result></message>`},
		{name: "room archive with the room's item", ok: true, from: "alice@localhost", verified: true, history: true, netID: "B1", mark: "B1",
			xml: `<message from="ops@rooms.localhost"><result xmlns="urn:xmpp:mam:2" queryid="q-room" id="B1"><forwarded xmlns="urn:xmpp:forward:0"><delay xmlns="urn:xmpp:delay" stamp="2024-01-02T03:04:05Z"/><message xmlns="jabber:client" from="ops@rooms.localhost/Al" type="groupchat"><body>missed</body><x xmlns="http://jabber.org/protocol/muc#user"><item jid="alice@localhost"/></x></message></forwarded></result></message>`},
		{name: "room archive result from elsewhere",
			xml: `<message from="alice@localhost"><result xmlns="urn:xmpp:mam:2" queryid="q-room" id="B1"><forwarded xmlns="urn:xmpp:forward:0"><message xmlns="jabber:client" from="ops@rooms.localhost/Al" type="groupchat"><body>x</body></message></forwarded></result></message>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := decodeMessage([]byte(tc.xml))
			if err != nil {
				t.Fatal(err)
			}
			c := classify(testView(), m)
			if c.ok != tc.ok {
				t.Fatalf("ok = %v (%s); want %v", c.ok, c.why, tc.ok)
			}
			if c.mark != tc.mark {
				t.Errorf("mark = %q; want %q", c.mark, tc.mark)
			}
			if !c.ok {
				return
			}
			in := c.in
			if in.From != tc.from || in.Verified != tc.verified || in.NetID != tc.netID || in.History != tc.history {
				t.Errorf("got from %q verified %v net_id %q history %v; want %q %v %q %v",
					in.From, in.Verified, in.NetID, in.History, tc.from, tc.verified, tc.netID, tc.history)
			}
			if in.Room != strings.HasPrefix(in.Chat, "ops@") || (!in.Room && in.Chat != in.From) {
				t.Errorf("chat %q room %v from %q", in.Chat, in.Room, in.From)
			}
			if tc.history && !in.At.Equal(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)) {
				t.Errorf("At = %v; want the delay stamp", in.At)
			}
		})
	}
}

// FuzzClassify feeds arbitrary stanzas to the decoder and classify: never
// a panic, and whatever is delivered keeps the identity rules.
func FuzzClassify(f *testing.F) {
	f.Add([]byte(`<message from="alice@localhost/p" type="chat" id="1"><body>hi</body><stanza-id xmlns="urn:xmpp:sid:0" by="dobby@localhost" id="S"/></message>`))
	f.Add([]byte(`<message from="ops@rooms.localhost/Al" type="groupchat"><body>x</body><delay xmlns="urn:xmpp:delay" from="ops@rooms.localhost" stamp="bad"/><x xmlns="http://jabber.org/protocol/muc#user"><item jid="@@"/></x></message>`))
	f.Add([]byte(`<message><result xmlns="urn:xmpp:mam:2" queryid="q-room" id="B"><forwarded xmlns="urn:xmpp:forward:0"><message xmlns="jabber:client" from="ops@rooms.localhost/" type="groupchat"><body>x</body></message></forwarded></result></message>`))
	f.Add([]byte(`<message from="ops@rooms.localhost"><result xmlns="urn:xmpp:mam:2" queryid="q-room" id="B"><forwarded xmlns="urn:xmpp:forward:0"><message xmlns="jabber:client" from="ops@rooms.localhost/Z" type="groupchat"><body>x</body><x xmlns="http://jabber.org/protocol/muc#user"><item jid="a@b"/></x></message></forwarded></result></message>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeMessage(data)
		if err != nil {
			return
		}
		c := classify(testView(), m)
		if !c.ok {
			return
		}
		in := c.in
		switch {
		case in.NetID == "" || in.From == "" || in.Chat == "":
			t.Fatalf("delivered without an id, sender or chat: %+v", in)
		case in.Verified && strings.HasPrefix(in.From, "~"):
			t.Fatalf("verified identity %q starts with ~", in.From)
		case !in.Verified && !strings.HasPrefix(in.From, "~"):
			t.Fatalf("unverified identity %q without ~", in.From)
		case in.Verified && in.From == "dobby@localhost":
			t.Fatalf("our own account delivered as a sender")
		case !in.Room && in.Chat != in.From:
			t.Fatalf("a DM whose chat %q is not its sender %q", in.Chat, in.From)
		case in.Room && in.Chat != room:
			t.Fatalf("a room message from %q, not a room we are in", in.Chat)
		case strings.TrimSpace(in.Text) == "":
			t.Fatalf("delivered without text")
		}
	})
}

func TestCleanTextRemovesControlCharacters(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                    "plain",
		"a\r\nb":                   "a\nb",
		"tab\tok":                  "tab\tok",
		"nul\x00 bell\x07 esc\x1b": "nul bell esc",
		"ctcp \x01ACTION\x01":      "ctcp ACTION",
		"c1 \u0085\u009b":          "c1 ",
		"bad \xff utf8":            "bad \uFFFD utf8",
		"nonchar \uFFFE\uFFFF.":    "nonchar .",
		"<xml> & 'quotes'":         "<xml> & 'quotes'",
	} {
		if got := cleanText(in); got != want {
			t.Errorf("cleanText(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestSplitTextKeepsRunesAndLines(t *testing.T) {
	if got := splitText(" \n\t", 10); len(got) != 0 {
		t.Fatalf("blank text split into %q", got)
	}
	long := strings.Repeat("é", 30) // 60 bytes
	parts := splitText(long, 7)
	if strings.Join(parts, "") != long {
		t.Fatal("split lost text")
	}
	for _, p := range parts {
		if len(p) > 7 || !utf8.ValidString(p) {
			t.Fatalf("part %q: over the limit or cut in a rune", p)
		}
	}
	lines := "first line\nsecond line\nthird"
	parts = splitText(lines, 16)
	if parts[0] != "first line\n" || strings.Join(parts, "") != lines {
		t.Fatalf("split %q at lines: %q", lines, parts)
	}
}

func TestServerAddrNeverLooksUpSRV(t *testing.T) {
	for _, tc := range []struct{ server, mode, want string }{
		{"", "starttls", "example.org:5222"},
		{"", "require", "example.org:5223"},
		{"chat.example.org:5299", "require", "chat.example.org:5299"},
	} {
		got, err := serverAddr(tc.server, "example.org", tc.mode)
		if err != nil || got != tc.want {
			t.Errorf("serverAddr(%q, %s) = %q, %v; want %q", tc.server, tc.mode, got, err, tc.want)
		}
	}
	if _, err := serverAddr("no-port", "example.org", "require"); err == nil {
		t.Error("server without a port: want an error")
	}
}
