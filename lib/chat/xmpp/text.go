package xmpp

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxBody is the most text one outgoing message carries: far below the
// stanza limits servers set (Prosody: 256 KiB), so a long reply is split.
var maxBody = 32 * 1024

// cleanText is text made safe to send: valid UTF-8, without control
// characters other than newline and tab (XML cannot carry most of them,
// and a CR or an escape sequence has no business in a chat), and without
// the two non-characters XML forbids. Escaping is the encoder's.
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case unicode.IsControl(r), r == 0xFFFE, r == 0xFFFF:
			return -1
		}
		return r
	}, s)
}

// splitText cuts s into pieces of at most max bytes, at a newline where
// one is in the second half of a piece, else at a rune boundary. Empty
// (or blank) text gives no pieces.
func splitText(s string, max int) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var parts []string
	for len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if nl := strings.LastIndexByte(s[:cut], '\n'); nl >= max/2 {
			cut = nl + 1
		}
		parts = append(parts, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		parts = append(parts, s)
	}
	return parts
}
