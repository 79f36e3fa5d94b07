package out

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable makes s safe to print on a terminal (dispatch-and-box.md,
// Containment: Screens): every byte that is not valid UTF-8, and every C0
// and C1 control and DEL (ESC and CR included), becomes \xNN; every other
// rune that is not printable (bidirectional overrides and other format
// characters, line and paragraph separators) becomes \uNNNN or
// \UNNNNNNNN, as Go quotes it. Worker-supplied text (task and template
// text, report text, reasons, file names, an agent's final words, a
// requested host) goes through it before it reaches a person's terminal,
// so it can never move the cursor, retitle the window, hide text, reorder
// a line or forge a row. A string with nothing to escape is returned as it
// is; --json output never goes through here.
func Printable(s string) string { return escape(s, false) }

// PrintableText is Printable for a block of text: newlines and tabs are
// kept, everything else is escaped as Printable does.
func PrintableText(s string) string { return escape(s, true) }

func escape(s string, keepLines bool) string {
	clean := true
	for _, r := range s {
		if !printableRune(r) && !(keepLines && (r == '\n' || r == '\t')) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	appendEscaped(&b, s, keepLines)
	return b.String()
}

func appendEscaped(b *strings.Builder, s string, keepLines bool) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(b, `\x%02x`, s[i])
		case printableRune(r), keepLines && (r == '\n' || r == '\t'):
			b.WriteString(s[i : i+n])
		case r < 0xa0: // C0, DEL, C1
			fmt.Fprintf(b, `\x%02x`, r)
		default:
			q := fmt.Sprintf("%+q", string(r)) // "\u202e"
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
}

// printableRune: a graphic rune or a plain space; not U+FFFD (it may stand
// for a bad byte, which the decoder reports as RuneError).
func printableRune(r rune) bool {
	return r != utf8.RuneError && (r == ' ' || unicode.IsPrint(r))
}

// IsTerminal reports whether w is a terminal (a character device), the
// case in which a verbatim stream such as a transcript is escaped.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// PrintableWriter passes a byte stream on to w as PrintableText would
// print it. A UTF-8 sequence split across writes is held until it is
// whole; Close writes what is held (escaped: it can never become whole).
type PrintableWriter struct {
	w       io.Writer
	pending []byte
}

// NewPrintableWriter returns a PrintableWriter writing to w.
func NewPrintableWriter(w io.Writer) *PrintableWriter { return &PrintableWriter{w: w} }

// Write escapes p and writes it on; it reports len(p) on success.
func (t *PrintableWriter) Write(p []byte) (int, error) {
	buf := append(t.pending, p...)
	t.pending = nil
	// Hold back an incomplete sequence at the end (at most 3 bytes).
	cut := len(buf)
	for k := 1; k <= 3 && k <= len(buf); k++ {
		c := buf[len(buf)-k]
		if c < 0x80 {
			break
		}
		if c >= 0xc0 { // a lead byte
			if !utf8.FullRune(buf[len(buf)-k:]) {
				cut = len(buf) - k
			}
			break
		}
	}
	t.pending = append([]byte(nil), buf[cut:]...)
	var b strings.Builder
	appendEscaped(&b, string(buf[:cut]), true)
	if _, err := io.WriteString(t.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close writes what is held, escaped.
func (t *PrintableWriter) Close() error {
	if len(t.pending) == 0 {
		return nil
	}
	s := PrintableText(string(t.pending))
	t.pending = nil
	_, err := io.WriteString(t.w, s)
	return err
}
