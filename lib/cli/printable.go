package cli

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable makes s safe to print on a terminal: every byte that is not
// valid UTF-8 becomes \xNN and every rune that is not printable (C0 and
// C1 controls, DEL, bidirectional overrides and other format characters,
// line and paragraph separators) becomes \a, \n, \t, \xNN, \uNNNN or
// \UNNNNNNNN, as Go quotes them. Worker-supplied text (report text, an
// agent's final words, a requested host) goes through it before it reaches
// a person's terminal, so it can never move the cursor, retitle the
// window, hide text or reorder a line. A string with nothing to escape is
// returned as it is.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if !printableRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case printableRune(r):
			b.WriteString(s[i : i+n])
		default:
			q := fmt.Sprintf("%+q", string(r)) // "\u202e", "\x1b", "\n"
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// printableRune: a graphic rune or a plain space; not U+FFFD (it may stand
// for a bad byte, which the decoder reports as RuneError).
func printableRune(r rune) bool {
	return r != utf8.RuneError && (r == ' ' || unicode.IsPrint(r))
}
