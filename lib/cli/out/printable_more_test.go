package out

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPrintableEscapesControlsAsHex(t *testing.T) {
	for _, c := range []struct{ in, line, text string }{
		{"plain text", "plain text", "plain text"},
		{"a\rb", `a\x0db`, `a\x0db`},
		{"\x1b[2Kok", `\x1b[2Kok`, `\x1b[2Kok`},
		{"two\nlines\tand tab", `two\x0alines\x09and tab`, "two\nlines\tand tab"},
		{"del\x7f", `del\x7f`, `del\x7f`},
		{"c1 \u009b31m csi", `c1 \x9b31m csi`, `c1 \x9b31m csi`},
		{"bad \xff\x9b byte", `bad \xff\x9b byte`, `bad \xff\x9b byte`},
		{"bidi \u202eetalp", `bidi \u202eetalp`, `bidi \u202eetalp`},
		{"sep\u2028x", `sep\u2028x`, `sep\u2028x`},
		{"ünïcødé ✓", "ünïcødé ✓", "ünïcødé ✓"},
		{`a \x41 backslash`, `a \x41 backslash`, `a \x41 backslash`},
	} {
		if got := Printable(c.in); got != c.line {
			t.Errorf("Printable(%q) = %q, want %q", c.in, got, c.line)
		}
		if got := PrintableText(c.in); got != c.text {
			t.Errorf("PrintableText(%q) = %q, want %q", c.in, got, c.text)
		}
	}
}

func TestTableEscapesCells(t *testing.T) {
	var b bytes.Buffer
	if err := Table(&b, []string{"ID", "TEXT"}, [][]string{{"t-1", "ok\rt-2  forged"}, {"t-3", "a\tb\nc"}}); err != nil {
		t.Fatal(err)
	}
	want := "ID   TEXT\nt-1  ok\\x0dt-2  forged\nt-3  a b c\n"
	if b.String() != want {
		t.Errorf("Table:\n%q\nwant\n%q", b.String(), want)
	}
}

func TestPrintableWriterMatchesPrintableTextAcrossSplits(t *testing.T) {
	in := "é\x1b[31m✓\r\n\xc3" // the last byte an incomplete sequence
	want := PrintableText(in)
	for cut := 0; cut <= len(in); cut++ {
		var b bytes.Buffer
		w := NewPrintableWriter(&b)
		w.Write([]byte(in[:cut]))
		w.Write([]byte(in[cut:]))
		w.Close()
		if b.String() != want {
			t.Errorf("split at %d: %q, want %q", cut, b.String(), want)
		}
	}
}

func FuzzPrintableText(f *testing.F) {
	f.Add("a\rb\x1b[0m\u009b\u202e\xff")
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{Printable(s), PrintableText(s)} {
			if !utf8.ValidString(out) {
				t.Fatalf("%q: output not UTF-8: %q", s, out)
			}
			for _, r := range out {
				if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
					t.Fatalf("%q: control %U left in %q", s, r, out)
				}
			}
		}
		if strings.ContainsAny(Printable(s), "\n\t") {
			t.Fatalf("%q: Printable kept a newline or tab", s)
		}
		var b bytes.Buffer
		w := NewPrintableWriter(&b)
		h := len(s) / 2
		w.Write([]byte(s[:h]))
		w.Write([]byte(s[h:]))
		w.Close()
		if b.String() != PrintableText(s) {
			t.Fatalf("%q: PrintableWriter %q, PrintableText %q", s, b.String(), PrintableText(s))
		}
	})
}
