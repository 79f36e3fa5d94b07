// Package xmpp is roster-chat's XMPP adapter (chat.Adapter): one account's
// client-to-server session, with its rooms, delivering each message to the
// conversation record and acknowledging it only once the record has it.
//
// It is built on mellium.im/xmpp (maintained, pure Go, token-stream based:
// stanzas are read and written as encoding/xml tokens and structs, never
// as hand-made XML). mellium gives the stream, TLS and STARTTLS, SASL
// (SCRAM-SHA-256, SCRAM-SHA-1, PLAIN), resource binding, and the
// payload types (disco, MAM queries, stanza ids, MUC namespaces); this
// package adds what mellium lacks: stream management, the archive
// catch-up loop, the identity rules, and its own MUC join (mellium's
// muc.Client races between Join and its presence handler, and blocks for
// good on an unexpected unavailable presence).
//
// Connecting. The server is Config.Server, else the JID's domain (5222,
// or 5223 for direct TLS); DNS SRV is never looked up. tls "require" is
// TLS from the first byte, "starttls" a required upgrade, "off" plaintext
// to a loopback address only. After binding, the session enables stream
// management (XEP-0198, <enable/> without resumption), sends presence,
// learns by disco#info which configured chats are rooms and joins them
// with the account's localpart as nick and no history; a room it is out
// of (kicked, nick taken) is joined again at each keepalive ping, then
// caught up. A refused login ends Run; anything else reconnects with
// backoff (1s doubling to 60s, reset after a minute connected).
//
// Acknowledgement. mellium's read loop hands every top-level element to
// one handler, one at a time, in the server's order. The handler keeps h,
// the XEP-0198 count of stanzas handled since <enabled/>: a message adds
// to h only after Deliver returned nil (or after it was deliberately
// skipped: no body, an error, a carbon, our own echo); an <r/> is
// answered with the current h and an <a/> is also sent after each
// delivered message. When Deliver fails the TCP connection is closed at
// once, the message uncounted: the server then holds it as unacknowledged
// (Prosody puts such messages in the offline store, or leaves them to the
// archive) and the next session gets it again. Requests of ours (disco,
// ping, archive queries) are matched to their answers in the same
// handler, so their answers are counted too; mellium's own IQ tracking
// would read them past the handler.
//
// Catch-up. Each archive (the account's, and each room's) has a mark in
// memory: the last archive id (XEP-0359 stanza-id) handled. After a
// reconnect (not the first connect) the session asks each archive
// (XEP-0313) for what came after its mark, page by page, and delivers it
// with History set; results are read by the same handler and acknowledged
// the same way. While an archive is being caught up, live messages do not
// move its mark, so a catch-up cut short starts again where it stopped.
// Duplicates are expected (the record files a network id once); losses
// are not.
//
// Identity. A direct message's sender is the bare JID the server stamped
// (Verified). A room message's sender is the occupant's real bare JID as
// the room's presence revealed it (Verified), else "~room@service/nick";
// for the room's archive and history, the room's own muc#user item, only
// when there is exactly one (an occupant can add a forged one). NetID is
// the stanza-id stamped by our account (DMs) or the room, else the
// message id, else a made one.
package xmpp
