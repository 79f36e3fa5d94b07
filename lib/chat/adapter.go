package chat

import (
	"context"
	"log/slog"
	"time"
)

// Inbound is one message an adapter received from its network.
type Inbound struct {
	// Chat is where it was said: for a direct message the sender's
	// identity (the same string as From), for a room the room's address
	// ("ops@rooms.example.org", "#ops").
	Chat string
	Room bool
	// From is the sender's identity. Verified is true only where the
	// network authenticated it (an XMPP JID stamped by the server, an IRC
	// account from the account-tag or SASL); an unverified identity starts
	// with "~" ("~alice" for an IRC nick without an account, "~room/nick"
	// for an anonymous room occupant), so that it can never equal an owner.
	From     string
	Verified bool
	Text     string
	// NetID is the network's own id of the message (an XMPP stanza-id or
	// message id, an IRC msgid tag); where the network has none the adapter
	// makes a unique one.
	NetID string
	At    time.Time // when the network says it was sent; zero: now
	// History is set for a message delivered by catch-up after a
	// disconnect (XEP-0313); the record files it only if it is new.
	History bool
}

// Deliver takes one inbound message: it returns nil once the message is
// durable (logged and fsynced), and only then may the adapter acknowledge
// it to the network. An error means "not taken": the adapter must not
// acknowledge it (it reconnects, and the network sends it again where it
// can).
type Deliver func(ctx context.Context, m Inbound) error

// Adapter is one chat account's connection to its network. Adapters hold
// no state of their own beyond the connection: the record (lib/chat) is
// the truth.
type Adapter interface {
	// Run connects, joins the rooms among Config.Chats, and hands each
	// inbound message to deliver, one at a time in the network's order.
	// It reconnects with backoff on its own, and returns only when ctx
	// ends (ctx.Err()) or when the account cannot work at all (a refused
	// login, a bad address: an error that says what to fix).
	Run(ctx context.Context, deliver Deliver) error
	// Send sends text to chat (a DM identity or a room among
	// Config.Chats), made safe for the network (split, escaped, control
	// characters removed), and returns the network id of what was sent
	// (the first message's, when split). It fails fast when not connected;
	// the caller retries.
	Send(ctx context.Context, chat, text string) (netID string, err error)
	// Nick is the name the account is seen as in rooms: a message that
	// names it (or the worker) mentions the worker.
	Nick() string
}

// Config is what an adapter is made from: org.toml's [chat.NAME] with the
// credential resolved, and the chats the account's workers serve.
type Config struct {
	Account  string // NAME of [chat.NAME]
	Protocol string // "xmpp", "irc" or "exec"
	// Address is the account: xmpp "user@domain" (a JID), irc
	// "nick@host:port".
	Address string
	// Server, when set, is the host:port to dial instead of what Address
	// implies (xmpp: DNS SRV is never looked up by roster: the JID's
	// domain at 5222, or at 5223 with TLS from the first byte, unless
	// Server says otherwise).
	Server   string
	TLS      string   // "require" (TLS from the first byte), "starttls", or "off" (loopback only)
	CAFile   string   // PEM roots to trust instead of the system's ("" = the system's)
	Password string   // the resolved credential ("" for exec)
	Command  []string // exec: the bridge program and its arguments
	Chats    []string // every chat a worker serves on this account (DMs and rooms; no "*")
	Log      *slog.Logger
}
