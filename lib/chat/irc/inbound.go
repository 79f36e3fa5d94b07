package irc

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"
	"unicode"

	"github.com/ergochat/irc-go/ircfmt"
	"github.com/ergochat/irc-go/ircmsg"

	"github.com/roster-sh/roster/lib/chat"
)

// onPrivmsg turns a PRIVMSG into an Inbound and queues it. NOTICEs are
// not handled at all (no callback), so they are ignored.
func (s *session) onPrivmsg(m ircmsg.Message) {
	in, ok := s.inbound(m)
	if !ok {
		return
	}
	s.enqueue(in)
}

// inbound is the message m carries, or false for what is not delivered:
// our own lines, lines from servers, CTCP other than ACTION, empty text,
// and targets that are neither our nick nor a channel.
func (s *session) inbound(m ircmsg.Message) (chat.Inbound, bool) {
	if len(m.Params) < 2 {
		return chat.Inbound{}, false
	}
	nuh, err := m.NUH()
	if err != nil || nuh.Name == "" || strings.ContainsRune(nuh.Name, '.') {
		return chat.Inbound{}, false // no source, or a server
	}
	me := s.conn.CurrentNick()
	if foldEq(nuh.Name, me) {
		return chat.Inbound{}, false
	}
	target, text := m.Params[0], m.Params[1]
	if strings.HasPrefix(text, "\x01") {
		body := strings.TrimSuffix(text[1:], "\x01")
		cmd, rest, _ := strings.Cut(body, " ")
		if !strings.EqualFold(cmd, "ACTION") {
			return chat.Inbound{}, false // CTCP VERSION, PING, DCC...: never answered
		}
		text = "* " + nuh.Name + " " + rest
	}
	text = cleanInbound(text)
	if strings.TrimSpace(text) == "" {
		return chat.Inbound{}, false
	}
	in := chat.Inbound{Text: text, From: "~" + nuh.Name}
	if acct := s.account(m); acct != "" {
		in.From, in.Verified = acct, true
		s.a.noteSeen(acct, nuh.Name)
	}
	if room, ok := s.roomTarget(target); ok {
		in.Chat, in.Room = room, true
	} else if foldEq(target, me) {
		in.Chat = in.From
	} else {
		return chat.Inbound{}, false // a server mask ($*) or someone else's nick
	}
	if ok, id := m.GetTag("msgid"); ok && id != "" {
		in.NetID = id
	} else {
		in.NetID = newNetID()
	}
	if ok, ts := m.GetTag("time"); ok {
		if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
			in.At = t
		}
	}
	return in, true
}

// account is the sender's services account from the account tag, trusted
// only when the server acknowledged account-tag (so it is the server's
// tag, not one a client made up); "" when none ("*" is "logged out").
func (s *session) account(m ircmsg.Message) string {
	if _, ok := s.conn.AcknowledgedCaps()["account-tag"]; !ok {
		return ""
	}
	ok, acct := m.GetTag("account")
	if !ok || acct == "" || acct == "*" || strings.HasPrefix(acct, "~") {
		return ""
	}
	return acct
}

// roomTarget is the room a PRIVMSG target names (a STATUSMSG prefix such
// as "@#ops" stripped), spelled as in Config.Chats when it is one of them.
func (s *session) roomTarget(target string) (string, bool) {
	is := s.conn.ISupport()
	chantypes, status := is["CHANTYPES"], is["STATUSMSG"]
	if chantypes == "" {
		chantypes = "#&"
	}
	if status == "" {
		status = "@+"
	}
	isChan := func(t string) bool { return t != "" && strings.ContainsRune(chantypes, rune(t[0])) }
	t := target
	if !isChan(t) {
		t = strings.TrimLeft(target, status) // "@#ops": to the room's operators
		if !isChan(t) {
			return "", false
		}
	}
	for _, r := range s.a.rooms {
		if foldEq(r, t) {
			return r, true
		}
	}
	return t, true
}

// onNick follows a verified sender's nick change, so a reply finds them.
func (s *session) onNick(m ircmsg.Message) {
	if len(m.Params) == 0 {
		return
	}
	old, nw := m.Nick(), m.Params[0]
	s.a.mu.Lock()
	defer s.a.mu.Unlock()
	for acct, n := range s.a.seen {
		if foldEq(n, old) {
			s.a.seen[acct] = nw
		}
	}
}

func (a *Adapter) noteSeen(acct, nick string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.seen) > 10000 {
		clear(a.seen)
	}
	a.seen[foldIRC(acct)] = nick
}

// cleanInbound strips IRC formatting (bold, colours...), makes the text
// valid UTF-8 and removes any other control character.
func cleanInbound(text string) string {
	text = ircfmt.Strip(strings.ToValidUTF8(text, "\uFFFD"))
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return ' '
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, text)
}

// newNetID is a unique id for a message the network gave none.
func newNetID() string {
	var b [12]byte
	rand.Read(b[:])
	return "irc-" + hex.EncodeToString(b[:])
}

// foldIRC is RFC 1459 case folding: ASCII letters, and []\~ as {}|^.
func foldIRC(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case 'A' <= c && c <= 'Z':
			b[i] = c + 'a' - 'A'
		case c == '[':
			b[i] = '{'
		case c == ']':
			b[i] = '}'
		case c == '\\':
			b[i] = '|'
		case c == '~':
			b[i] = '^'
		}
	}
	return string(b)
}

func foldEq(a, b string) bool { return a != "" && foldIRC(a) == foldIRC(b) }
