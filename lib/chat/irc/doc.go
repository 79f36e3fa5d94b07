// Package irc is roster-chat's IRC adapter (chat.Adapter, protocol "irc").
//
// # Library
//
// The protocol is github.com/ergochat/irc-go: ircevent is the client
// (TLS, IRCv3 CAP negotiation, SASL PLAIN, PING/PONG keepalive, nick
// fallback) and ircmsg parses and builds every line. It is maintained by
// the Ergo IRC server's authors, handles message tags, and has no
// dependencies of its own. No IRC line is parsed or assembled by hand
// here. The adapter makes a fresh ircevent.Connection per connection and
// runs its own reconnect loop (ircevent's Loop retries at a fixed rate and
// knows no context): backoff from MinBackoff (1 s) doubling to MaxBackoff
// (60 s), back to 1 s after a connection that lasted StableAfter (60 s),
// until ctx ends. A PING goes out every KeepAlive (60 s); no PONG within
// Timeout (20 s) drops the connection.
//
// # Account
//
// Address is "nick@host:port" (port defaults to 6697, or 6667 with TLS
// off); Config.Server, when set, is the host:port dialed instead (the
// certificate is still checked for the Address host). TLS "require" is TLS
// from the first byte, verified against CAFile (PEM roots) or the
// system's roots;
// "starttls" is refused (IRC servers offer TLS on a port of its own); "off"
// is allowed only to a loopback IP literal or "localhost", and the dialed
// socket's peer is checked to be loopback too. A credential (Password)
// means SASL PLAIN as the nick, and it must work: a refusal (904, 902...)
// or a server that offers no SASL makes Run return an error naming the
// credential rather than connect unauthenticated. Caps requested where
// offered: account-tag, account-notify, extended-join, message-tags,
// server-time (not echo-message). The rooms among Config.Chats (names
// starting with # or &) are joined after each registration (JOIN lists,
// not one line per room; a refused join is logged). A taken nick
// falls back to ircevent's "nick_0", "nick_1"...; the configured nick is
// asked for again at each keepalive. Nick reports the current one.
//
// # Identity
//
// An IRC nick is never an identity anyone verified: a sender is
// From = "~" + nick, Verified false, always, even when the nick equals an
// owner's name. Only a server's account tag (with the account-tag cap
// acknowledged, so the server set it) gives From = the account name,
// Verified true. In a DM, Chat = From ("~bob", or "alice"); in a room,
// Chat = the room as spelled in Config.Chats ("#ops"; IRC's RFC 1459 case
// folding decides equality), Room true. Send to "~bob" sends to the nick
// bob; Send to a verified account "alice" sends only to a nick that WHOIS
// (RPL_WHOISACCOUNT) shows logged in as alice at that moment, never to
// whoever holds the nick "alice".
//
// # Inbound
//
// PRIVMSGs to our nick (DMs) and to channels are delivered, one at a time,
// in the order the server sent them. NOTICEs are ignored, as are our own
// lines, lines from servers and CTCP requests (VERSION, PING, DCC...,
// never answered); a CTCP ACTION ("/me waves") is delivered as the text
// "* nick waves". Formatting codes are stripped from the text. NetID is the
// msgid tag where the server sends one, else a made-up "irc-" + 24 hex
// digits; At is the server-time tag where there is one, else zero.
//
// IRC has no acknowledgement and no redelivery: what the server sent is
// gone from it. The adapter reads ahead into a small queue and delivers in
// order; if Deliver returns an error, the message is lost, which is
// logged, and the adapter drops the connection and reconnects (messages
// read behind it are logged as lost too): nothing else can be done on IRC.
// Messages sent to the account while it is disconnected are lost by the
// network (ngircd answers "No such nick" to the sender).
//
// # Outbound and flood control
//
// Send makes text safe (safeLines): invalid UTF-8 replaced, "\n" splits
// into separate PRIVMSGs, "\t" becomes a space, every other control
// character (NUL, CR, CTCP's \x01, formatting codes) is removed, empty lines
// are skipped, and a long line is split (at a space where one is near the
// end, never inside a UTF-8 rune) so that the whole line as relayed,
// ":nick!user@host PRIVMSG target :text\r\n", fits the protocol's 512 bytes
// with 100 bytes reserved for the prefix. Lines leave through a token
// bucket: Burst (4) at once, then one per Every (500 ms), per account, so
// servers do not disconnect the account for flooding; a long reply takes
// its time (Send waits, within its ctx). One Send runs at a time so a split
// reply stays together. Send fails fast (ErrNotConnected) while the account
// is down, and also when the connection is lost mid-reply (the caller's
// resend may then repeat the first lines). IRC gives no id for what a
// client sends: the returned id is made up.
//
// # Tests
//
// Tests run against a real ngIRCd (lib/chat/chattest.StartNgircd). ngIRCd
// has no SASL, no accounts and no message tags, so SASL PLAIN, the account
// tag, msgid/time tags and the WHOIS check are tested against a small fake
// server in fake_test.go (lines parsed and built with ircmsg); ngIRCd
// covers the rest, including that a password for a server without SASL is
// refused.
package irc
