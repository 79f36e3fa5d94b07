package chat

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/tms"
)

// Verdict is what intake makes of one inbound message for one worker's
// channel (docs/channels.md, "Intake").
type Verdict struct {
	State    string // Received (to be filed), Context or Dropped
	Standing string // tms.Owner or tms.Proactive, for Received
	Text     string // what is logged: cut to MaxText; "" for Dropped
	Pair     bool   // a stranger's DM: answer with a pairing code (at most daily)
}

// MaxText is what a relay carries of a message: tms.MaxText less room for
// the note that says it was cut.
const MaxText = tms.MaxText - 256

// Judge applies ch's rules to m: in a room a message that does not
// mention the worker is context; a sender outside allow is dropped (a
// DM's sender is offered pairing); standing is owner only for a verified
// owner's DM. worker and nick are the names that mention the worker.
func Judge(ch config.Channel, worker, nick string, m Inbound) Verdict {
	text := CutText(m.Text)
	if m.Room && ch.Mention && !Mentions(m.Text, worker, nick) {
		return Verdict{State: Context, Text: text}
	}
	if !Allowed(ch, m) {
		return Verdict{State: Dropped, Pair: !m.Room}
	}
	v := Verdict{State: Received, Standing: tms.Proactive, Text: text}
	if IsOwner(ch, m) {
		v.Standing = tms.Owner
	}
	return v
}

// Allowed tells whether m's sender may reach the worker: its identity
// matches allow (an unverified one starts with "~" and matches only a
// pattern written for it, or "*").
func Allowed(ch config.Channel, m Inbound) bool {
	if !m.Verified && !strings.HasPrefix(m.From, "~") {
		return false // an adapter bug: never trust it
	}
	return config.MatchIdentity(ch.Allow, m.From)
}

// IsOwner tells whether m has owner standing: a verified owner's DM.
func IsOwner(ch config.Channel, m Inbound) bool {
	if m.Room || !m.Verified || strings.HasPrefix(m.From, "~") {
		return false
	}
	for _, o := range ch.Owners {
		if o == m.From {
			return true
		}
	}
	return false
}

// Mentions tells whether text names the worker or the account's nick as
// a word (case-insensitive): "dobby: look", "@dobby", "hey Dobby,".
func Mentions(text, worker, nick string) bool {
	low := strings.ToLower(text)
	for _, name := range []string{worker, nick} {
		name = strings.ToLower(name)
		if name == "" {
			continue
		}
		for i := 0; ; {
			j := strings.Index(low[i:], name)
			if j < 0 {
				break
			}
			s, e := i+j, i+j+len(name)
			if boundary(low, s-1, true) && boundary(low, e, false) {
				return true
			}
			i = s + 1
		}
	}
	return false
}

// boundary tells whether position i of s (just before or after a name)
// is not part of a word.
func boundary(s string, i int, before bool) bool {
	if i < 0 || i >= len(s) {
		return true
	}
	var r rune
	if before {
		r, _ = utf8.DecodeLastRuneInString(s[:i+1])
	} else {
		r, _ = utf8.DecodeRuneInString(s[i:])
	}
	return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-')
}

// CutText cuts a message over MaxText at a rune boundary, saying so in
// the text; invalid UTF-8 is replaced.
func CutText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= MaxText {
		return s
	}
	n := MaxText
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("\n\n[roster: this message was %d bytes; it is cut here, at %d KiB]", len(s), MaxText>>10)
}
