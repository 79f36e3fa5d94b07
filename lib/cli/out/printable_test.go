package out

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestPrintableEscapesTerminalControls(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text, é and 日本", "plain text, é and 日本"},
		{"", ""},
		{"\x1b]0;owned\x07", `\x1b]0;owned\x07`},
		{"a\nb\tc\rd", `a\x0ab\x09c\x0dd`},
		{"\u202egnp.exe", `\u202egnp.exe`},
		{"csi \u009b31m", `csi \x9b31m`},
		{"del\x7f", `del\x7f`},
		{"bad \xff\xfe byte", `bad \xff\xfe byte`},
		{"sep\u2028x", `sep\u2028x`},
	} {
		if got := Printable(c.in); got != c.want {
			t.Errorf("Printable(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzPrintable(f *testing.F) {
	f.Add("\x1b[2J\u202e\xff")
	f.Add("ordinary")
	f.Fuzz(func(t *testing.T, s string) {
		out := Printable(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Printable(%q) = %q: not valid UTF-8", s, out)
		}
		for _, r := range out {
			if r != ' ' && !unicode.IsPrint(r) {
				t.Fatalf("Printable(%q) = %q holds %U", s, out, r)
			}
		}
		if strings.ContainsRune(s, '\\') == false && !strings.ContainsRune(out, '\\') && out != s {
			t.Fatalf("Printable(%q) = %q changed a string without escapes", s, out)
		}
	})
}
