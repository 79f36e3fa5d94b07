package xmpp

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"time"

	"mellium.im/xmpp/history"
	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// mark is where catch-up of one archive starts: the last archive id
// handled (delivered or deliberately skipped), and when that was said.
// Marks are in memory only: across a restart of roster-chat the server's
// offline store and smacks redelivery carry what was unacknowledged.
type mark struct {
	id string
	at time.Time
}

// Catch-up paging.
var (
	mamPage     = uint64(50)
	mamMaxPages = 2000
	// marginBack is how far before a time catch-up starts when it has no
	// archive id to start after (clocks differ; duplicates are harmless).
	marginBack = 5 * time.Minute
)

// fin is the end of one page of archive results (XEP-0313).
type fin struct {
	Fin struct {
		Complete string `xml:"complete,attr"`
		Set      struct {
			Last string `xml:"last"`
		} `xml:"http://jabber.org/protocol/rsm set"`
	} `xml:"urn:xmpp:mam:2 fin"`
}

// catchUp asks archive (ours: to is zero; a room's: to is the room) for
// what came after its mark and delivers it, marked History, through the
// read loop like any message (so it is acknowledged the same way). It
// returns an error only when the connection is in doubt; an archive that
// cannot be read is logged.
func (c *conn) catchUp(ctx context.Context, archive string, to jid.JID) error {
	done := func() {
		c.mu.Lock()
		delete(c.held, archive)
		c.mu.Unlock()
	}
	mk := c.a.getMark(archive)
	q := history.Query{Limit: mamPage, PageID: mk.id}
	if mk.id == "" {
		q.Start = c.a.started.Add(-marginBack)
	}
	name := archive
	if name == "" {
		name = "own archive"
	}
	for page := 0; page < mamMaxPages; page++ {
		res, err := c.archivePage(ctx, archive, to, q)
		var se stanza.Error
		switch {
		case errors.As(err, &se) && se.Condition == stanza.ItemNotFound && q.PageID != "":
			// The mark is gone from the archive (expired): by time instead.
			c.log.Warn("catch-up: the archive no longer has the last id seen; reading by time", "archive", name)
			q.PageID, q.Start = "", mk.at.Add(-marginBack)
			continue
		case errors.As(err, &se):
			c.log.Warn("catch-up: the archive refused the query; messages missed while away may be missing", "archive", name, "err", err)
			done()
			return nil
		case err != nil:
			return fmt.Errorf("catch-up of %s: %w", name, err)
		}
		last := res.Fin.Set.Last
		if res.Fin.Complete == "true" || last == "" || last == q.PageID {
			c.log.Debug("catch-up done", "archive", name, "pages", page+1)
			done()
			return nil
		}
		q.PageID = last
	}
	c.log.Warn("catch-up: stopped after too many pages; the rest at the next reconnect", "archive", name)
	return nil
}

// archivePage runs one query; its results are delivered by the read
// loop before the answer arrives (the server sends them first).
func (c *conn) archivePage(ctx context.Context, archive string, to jid.JID, q history.Query) (fin, error) {
	q.ID = randomID()
	c.mu.Lock()
	c.view.queries[q.ID] = archive
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.view.queries, q.ID)
		c.mu.Unlock()
	}()
	var res fin
	err := c.request(ctx, stanza.IQ{Type: stanza.SetIQ, To: to}, q.TokenReader(),
		func(d *xml.Decoder) error { return d.Decode(&res) })
	return res, err
}
