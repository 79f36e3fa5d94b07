package xmpp

import (
	"context"
	"encoding/xml"
	"errors"

	"mellium.im/xmlstream"
	"mellium.im/xmpp/disco"
	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/muc"
	"mellium.im/xmpp/stanza"
)

// joinRooms finds which of the configured chats are rooms (disco#info:
// an identity of category "conference") and joins them with our nick,
// asking for no history (catch-up reads the room's archive instead). It
// returns the rooms joined; one that cannot be joined is logged and
// tried again by rejoin.
func (c *conn) joinRooms(ctx context.Context) []jid.JID {
	var joined []jid.JID
	for _, chat := range c.a.cfg.Chats {
		addr, err := jid.Parse(chat)
		if err != nil || addr.Localpart() == "" {
			continue
		}
		addr = addr.Bare()
		if !c.a.knownRoom(addr) {
			isRoom, err := c.isRoom(ctx, addr)
			if err != nil {
				if ctx.Err() != nil {
					return joined
				}
				c.log.Debug("disco#info failed; taken as not a room for now", "chat", chat, "err", err)
				continue
			}
			if !isRoom {
				continue
			}
			c.a.noteRoom(addr)
		}
		c.mu.Lock()
		c.view.known[addr.String()] = true
		c.mu.Unlock()
		if c.catching {
			c.hold(addr.String())
		}
		if err := c.join(ctx, addr); err != nil {
			if ctx.Err() != nil {
				return joined
			}
			c.log.Warn("cannot join the room; trying again in a while", "room", addr.String(), "err", err)
			continue
		}
		joined = append(joined, addr)
	}
	return joined
}

// rejoin enters again the rooms we are out of (kicked, a nick in use,
// the room gone for a while), each followed by its catch-up.
func (c *conn) rejoin(ctx context.Context) {
	defer c.rejoining.Store(false)
	for _, room := range c.a.knownRooms() {
		if c.isJoined(room) {
			continue
		}
		c.hold(room.String())
		if err := c.join(ctx, room); err != nil {
			c.log.Debug("rejoin failed", "room", room.String(), "err", err)
			continue
		}
		if err := c.catchUp(ctx, room.String(), room); err != nil {
			c.killFor(err)
			return
		}
	}
}

func (c *conn) hold(archive string) {
	c.mu.Lock()
	c.held[archive] = true
	c.mu.Unlock()
}

// isRoom asks addr what it is; a room not made yet answers with an
// error, so then its service is asked whether it is a conference service
// (joining makes the room).
func (c *conn) isRoom(ctx context.Context, addr jid.JID) (bool, error) {
	isRoom, err := c.isConference(ctx, addr)
	var se stanza.Error
	if errors.As(err, &se) {
		isRoom, err = c.isConference(ctx, addr.Domain())
		if errors.As(err, &se) {
			return false, nil // a user's account, or nothing: not a room
		}
	}
	return isRoom, err
}

func (c *conn) isConference(ctx context.Context, addr jid.JID) (bool, error) {
	var res struct {
		Info disco.Info `xml:"http://jabber.org/protocol/disco#info query"`
	}
	err := c.request(ctx, stanza.IQ{Type: stanza.GetIQ, To: addr}, disco.InfoQuery{}.TokenReader(),
		func(d *xml.Decoder) error { return d.Decode(&res) })
	if err != nil {
		return false, err
	}
	for _, id := range res.Info.Identity {
		if id.Category == "conference" {
			return true, nil
		}
	}
	return false, nil
}

// join enters room as our nick, asking for no history, and waits for
// the room's answer: our own presence (status 110) or an error. The join
// is done here rather than with mellium's muc.Client, whose Join and
// presence handler race on the channel they share (go test -race), and
// whose presence handler blocks for good on an unavailable presence
// nobody waits for.
func (c *conn) join(ctx context.Context, room jid.JID) error {
	me, err := room.WithResource(c.a.nick)
	if err != nil {
		return err
	}
	key := room.String()
	done := make(chan error, 1)
	c.mu.Lock()
	c.view.rooms[key] = &roomView{nick: c.a.nick, occupants: map[string]string{}}
	c.joining[key] = done
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.joining, key)
		c.mu.Unlock()
	}()
	history := xml.StartElement{Name: xml.Name{Local: "history"},
		Attr: []xml.Attr{{Name: xml.Name{Local: "maxstanzas"}, Value: "0"}}}
	x := xmlstream.Wrap(xmlstream.Wrap(nil, history), xml.StartElement{Name: xml.Name{Space: muc.NS, Local: "x"}})
	if err := c.send(ctx, stanza.Presence{ID: randomID(), To: me}.Wrap(x)); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, iqTimeout)
	defer cancel()
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	case <-c.dead:
		err = errClosed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		delete(c.view.rooms, key)
		return err
	}
	c.joined[key] = true
	c.log.Info("joined room", "room", key, "nick", c.view.rooms[key].nick)
	return nil
}

func (c *conn) isJoined(room jid.JID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.joined[room.String()]
}

type presence struct {
	From    string        `xml:"from,attr"`
	Type    string        `xml:"type,attr"`
	MUCUser []mucUser     `xml:"http://jabber.org/protocol/muc#user x"`
	Err     *stanza.Error `xml:"error"`
}

// handlePresence keeps the occupants of our rooms (nick -> real JID, as
// the room's presence says: the one source of a live message's sender)
// and ends a join waiting for the room's answer.
func (c *conn) handlePresence(el xml.TokenReader) {
	var p presence
	if err := xml.NewTokenDecoder(el).Decode(&p); err != nil {
		return
	}
	from, err := jid.Parse(p.From)
	if err != nil {
		return
	}
	key := from.Bare().String()
	nick := from.Resourcepart()
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.view.rooms[key]
	if r == nil {
		return
	}
	self := nick == r.nick
	for _, x := range p.MUCUser {
		for _, st := range x.Status {
			self = self || st.Code == 110
		}
	}
	done := c.joining[key]
	switch p.Type {
	case "":
		if nick == "" {
			return
		}
		real := ""
		if len(p.MUCUser) > 0 && len(p.MUCUser[0].Items) > 0 {
			real = p.MUCUser[0].Items[0].JID
		}
		r.occupants[nick] = real
		if self && done != nil {
			r.nick = nick // the room may have changed it
			done <- nil
			delete(c.joining, key)
		}
	case string(stanza.UnavailablePresence):
		delete(r.occupants, nick)
		if self && c.joined[key] {
			c.joined[key] = false
			c.log.Warn("we are out of the room (kicked, or the room closed); rejoining", "room", key)
		}
	case string(stanza.ErrorPresence):
		if done != nil {
			err := error(errors.New("the room refused the join"))
			if p.Err != nil {
				err = *p.Err
			}
			done <- err
			delete(c.joining, key)
		}
	}
}
