package irc

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The line budget. A PRIVMSG reaches the other side as
// ":nick!user@host PRIVMSG target :text\r\n", at most 512 bytes, and the
// server adds the prefix: prefixReserve is a conservative bound for
// "nick!user@host" (nick ≤ 30, user ≤ 10, host ≤ 60 or so).
const (
	maxLine       = 512
	prefixReserve = 100
	minBudget     = 32
)

// lineBudget is how many bytes of text one PRIVMSG to target may carry.
func lineBudget(target string) int {
	return maxLine - len(":") - prefixReserve - len(" PRIVMSG ") - len(target) - len(" :") - len("\r\n")
}

// safeLines makes text safe for IRC and splits it into PRIVMSG texts of at
// most budget bytes each:
//   - invalid UTF-8 becomes U+FFFD;
//   - "\n" (and U+0085, U+2028, U+2029) ends a line; each line is its own
//     message;
//   - "\t" becomes a space;
//   - every other control character is removed: NUL, CR, CTCP's \x01, IRC
//     formatting codes (\x02, \x03, \x0f, \x16, \x1d, \x1f...), DEL, C1;
//   - trailing spaces are removed and lines left empty are skipped;
//   - a line longer than budget is split at its last space in the second
//     half of the budget, else at the last rune boundary that fits (a UTF-8
//     rune is never split).
func safeLines(text string, budget int) []string {
	if budget < utf8.UTFMax {
		budget = utf8.UTFMax
	}
	text = strings.ToValidUTF8(text, "\uFFFD")
	var out []string
	var b strings.Builder
	for _, r := range text {
		switch {
		case r == '\n' || r == '\u0085' || r == '\u2028' || r == '\u2029':
			out = appendSplit(out, b.String(), budget)
			b.Reset()
		case r == '\t':
			b.WriteByte(' ')
		case unicode.IsControl(r):
		default:
			b.WriteRune(r)
		}
	}
	return appendSplit(out, b.String(), budget)
}

// appendSplit appends line to out in pieces of at most budget bytes.
func appendSplit(out []string, line string, budget int) []string {
	line = strings.TrimRight(line, " ")
	for len(line) > budget {
		cut := budget
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut--
		}
		piece, rest := line[:cut], line[cut:]
		if sp := strings.LastIndexByte(line[:budget+1], ' '); sp >= budget/2 {
			piece, rest = line[:sp], strings.TrimLeft(line[sp+1:], " ")
		}
		if piece = strings.TrimRight(piece, " "); piece != "" {
			out = append(out, piece)
		}
		line = rest
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}
