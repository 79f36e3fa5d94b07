package xmpp

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"time"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"

	"github.com/roster-sh/roster/lib/chat"
)

// Namespaces this package reads or writes beyond what mellium names.
const (
	nsSM      = "urn:xmpp:sm:3"
	nsMAM     = "urn:xmpp:mam:2"
	nsForward = "urn:xmpp:forward:0"
	nsCarbons = "urn:xmpp:carbons:2"
	nsMUCUser = "http://jabber.org/protocol/muc#user"
	nsXML     = "http://www.w3.org/XML/1998/namespace"
)

// message is what this package reads of a <message/>: plain strings
// where mellium's types would refuse a malformed attribute, so that one
// odd stanza is skipped (and counted) rather than ending the stream.
type message struct {
	XMLName   xml.Name
	ID        string     `xml:"id,attr"`
	From      string     `xml:"from,attr"`
	Type      string     `xml:"type,attr"`
	Lang      string     `xml:"http://www.w3.org/XML/1998/namespace lang,attr"`
	Bodies    []body     `xml:"jabber:client body"`
	StanzaIDs []stanzaID `xml:"urn:xmpp:sid:0 stanza-id"`
	Delays    []delay    `xml:"urn:xmpp:delay delay"`
	MUCUser   []mucUser  `xml:"http://jabber.org/protocol/muc#user x"`
	Result    *mamResult `xml:"urn:xmpp:mam:2 result"`
	Received  *struct{}  `xml:"urn:xmpp:carbons:2 received"`
	Sent      *struct{}  `xml:"urn:xmpp:carbons:2 sent"`
}

type body struct {
	Lang string `xml:"http://www.w3.org/XML/1998/namespace lang,attr"`
	Text string `xml:",chardata"`
}

type stanzaID struct {
	ID string `xml:"id,attr"`
	By string `xml:"by,attr"`
}

type delay struct {
	From  string `xml:"from,attr"`
	Stamp string `xml:"stamp,attr"`
}

type mucUser struct {
	Items []mucItem `xml:"item"`
	// Status codes: 110 is "this is you", 303 a nick change.
	Status []struct {
		Code int `xml:"code,attr"`
	} `xml:"status"`
}

type mucItem struct {
	JID  string `xml:"jid,attr"`
	Nick string `xml:"nick,attr"`
}

type mamResult struct {
	QueryID   string      `xml:"queryid,attr"`
	ID        string      `xml:"id,attr"`
	Forwarded forwardedEl `xml:"urn:xmpp:forward:0 forwarded"`
}

type forwardedEl struct {
	Delay   delay    `xml:"urn:xmpp:delay delay"`
	Message *message `xml:"jabber:client message"`
}

// view is what classify needs to know of the session: who we are, the
// rooms we are in (our nick, the occupants' real JIDs as their presence
// said), and the archive queries we have running.
type view struct {
	me      jid.JID              // our bare JID
	rooms   map[string]*roomView // the rooms we are in or joining
	known   map[string]bool      // every configured chat known to be a room
	queries map[string]string    // MAM queryid -> archive ("" ours, else a room's bare JID)
}

type roomView struct {
	nick      string
	occupants map[string]string // nick -> real bare JID ("" when the room hides it)
}

// classified is one message sorted out: what to deliver (ok), and which
// archive position it stands for (archive "" is ours, else the room's;
// mark "" when the server stamped no id), so catch-up can start after it.
type classified struct {
	in      chat.Inbound
	ok      bool
	why     string // why it is skipped, for the debug log
	archive string
	mark    string
	catchup bool // came from a MAM query (its archive position is the query's)
}

func skip(why string) classified { return classified{why: why} }

// classify turns one inbound <message/> into a delivery, or says why it
// is not one. It trusts only what the server stamps: the from of a c2s
// stanza, stanza-ids by us or the room (servers strip forged ones),
// occupants' real JIDs from presence, archive results from the archive.
func classify(v *view, m *message) classified {
	switch {
	case m.Type == string(stanza.ErrorMessage):
		return skip("error message")
	case m.Received != nil || m.Sent != nil:
		return skip("carbon copy")
	case m.Result != nil:
		return v.archived(m)
	}
	from, err := jid.Parse(m.From)
	if m.From == "" || err != nil {
		return skip("no usable from")
	}
	if r, isRoom := v.rooms[from.Bare().String()]; isRoom {
		return v.roomMessage(m, from, r)
	}
	if m.Type == string(stanza.GroupChatMessage) || v.known[from.Bare().String()] {
		return skip("from a room we are not in")
	}
	if m.Type == string(stanza.HeadlineMessage) {
		return skip("headline")
	}
	if from.Bare().Equal(v.me) {
		return skip("from our own account")
	}
	text, ok := pickBody(m)
	if !ok {
		return skip("no body")
	}
	who := from.Bare().String()
	c := classified{ok: true, in: chat.Inbound{
		Chat: who, From: who, Verified: true, Text: text, At: firstStamp(m.Delays),
	}}
	c.mark = stampedID(m.StanzaIDs, v.me.String())
	c.in.NetID = netID(c.mark, m.ID)
	return c
}

// roomMessage is a live message from a room we are in (or joining).
func (v *view) roomMessage(m *message, from jid.JID, r *roomView) classified {
	room := from.Bare().String()
	nick := from.Resourcepart()
	switch {
	case m.Type != string(stanza.GroupChatMessage):
		return skip("private or service message from a room")
	case nick == "":
		return skip("message from the room itself")
	}
	c := classified{archive: room, mark: stampedID(m.StanzaIDs, room)}
	if nick == r.nick {
		c.why = "our own message, echoed"
		return c
	}
	text, ok := pickBody(m)
	if !ok {
		c.why = "no body (subject, state)"
		return c
	}
	c.ok = true
	c.in = chat.Inbound{Chat: room, Room: true, Text: text, At: firstStamp(m.Delays)}
	replay := false
	for _, d := range m.Delays {
		if d.From == room {
			replay = true
		}
	}
	if replay {
		// The room's history on join: its own x item, if unambiguous.
		c.in.History = true
		c.in.From, c.in.Verified = occupantFrom(room, nick, soleItemJID(m.MUCUser))
	} else {
		c.in.From, c.in.Verified = occupantFrom(room, nick, r.occupants[nick])
	}
	c.in.NetID = netID(c.mark, m.ID)
	return c
}

// archived is a result of one of our MAM queries: the archive must be the
// one asked (our own account, or the room), else it is a forgery.
func (v *view) archived(m *message) classified {
	res := m.Result
	archive, asked := v.queries[res.QueryID]
	if !asked || res.ID == "" {
		return skip("archive result of no query of ours")
	}
	if archive == "" {
		if m.From != "" && m.From != v.me.String() {
			return skip("archive result not from our archive")
		}
	} else if m.From != archive {
		return skip("room archive result not from the room")
	}
	c := classified{archive: archive, mark: res.ID, catchup: true}
	inner := res.Forwarded.Message
	if inner == nil {
		c.why = "archive result without a message"
		return c
	}
	from, err := jid.Parse(inner.From)
	if err != nil || inner.From == "" {
		c.why = "archived message without a usable from"
		return c
	}
	text, ok := pickBody(inner)
	if !ok || inner.Type == string(stanza.ErrorMessage) {
		c.why = "archived message without a body"
		return c
	}
	c.in = chat.Inbound{Text: text, NetID: res.ID, History: true, At: parseStamp(res.Forwarded.Delay.Stamp)}
	if archive == "" {
		_, isRoom := v.rooms[from.Bare().String()]
		if from.Bare().Equal(v.me) || isRoom || inner.Type == string(stanza.GroupChatMessage) {
			c.why = "archived message of ours or of a room"
			return c
		}
		who := from.Bare().String()
		c.in.Chat, c.in.From, c.in.Verified = who, who, true
		c.ok = true
		return c
	}
	nick := from.Resourcepart()
	if from.Bare().String() != archive || nick == "" {
		c.why = "room archive entry not from an occupant"
		return c
	}
	if r := v.rooms[archive]; r != nil && nick == r.nick {
		c.why = "our own message in the room archive"
		return c
	}
	c.in.Chat, c.in.Room = archive, true
	c.in.From, c.in.Verified = occupantFrom(archive, nick, soleItemJID(inner.MUCUser))
	c.ok = true
	return c
}

// occupantFrom is an occupant's identity: the real bare JID when the room
// revealed it, else "~room/nick", which can never equal a JID.
func occupantFrom(room, nick, real string) (string, bool) {
	if real != "" {
		if j, err := jid.Parse(real); err == nil && j.Localpart() != "" {
			return j.Bare().String(), true
		}
	}
	return "~" + room + "/" + nick, false
}

// soleItemJID is the real JID a room attached to a message it replays,
// when there is exactly one: an occupant can put its own muc#user item in
// the message it sends (Prosody appends the room's after it), so two
// items mean "unknown", never "the first one".
func soleItemJID(xs []mucUser) string {
	var found []string
	for _, x := range xs {
		for _, it := range x.Items {
			if it.JID != "" {
				found = append(found, it.JID)
			}
		}
	}
	if len(found) != 1 {
		return ""
	}
	return found[0]
}

// pickBody is the message's text: the body in the message's language (or
// without one), else the first; whitespace-only is no body.
func pickBody(m *message) (string, bool) {
	if len(m.Bodies) == 0 {
		return "", false
	}
	text := m.Bodies[0].Text
	for _, b := range m.Bodies {
		if b.Lang == "" || b.Lang == m.Lang {
			text = b.Text
			break
		}
	}
	for _, r := range text {
		if r != ' ' && r != '\n' && r != '\t' && r != '\r' {
			return text, true
		}
	}
	return "", false
}

// stampedID is the XEP-0359 stanza-id stamped by by, or "".
func stampedID(ids []stanzaID, by string) string {
	for _, s := range ids {
		if s.By == by && s.ID != "" {
			return s.ID
		}
	}
	return ""
}

// netID is the network id of a message: the server's stanza-id, else the
// sender's message id, else one made here.
func netID(stamped, msgID string) string {
	switch {
	case stamped != "":
		return stamped
	case msgID != "":
		return msgID
	}
	return "roster-" + randomID()
}

func firstStamp(ds []delay) time.Time {
	for _, d := range ds {
		if t := parseStamp(d.Stamp); !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// parseStamp reads a XEP-0082 date-time; a bad one is zero ("now").
func parseStamp(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

func randomID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
