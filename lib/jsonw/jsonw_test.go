package jsonw

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

// marshal is what encoding/json writes for s, HTML escaped or not.
func marshal(t testing.TB, s string, html bool) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	// Go before 1.27 wrote a byte that is not UTF-8 as the escape
	// \ufffd, 1.27 (the build's, Makefile) writes the character.
	if runtime.Version() < "go1.27" && !utf8.ValidString(s) && !strings.Contains(s, `\`) {
		out = bytes.ReplaceAll(out, []byte(`\ufffd`), []byte("\ufffd"))
	}
	return out
}

func TestAppendStringIsEncodingJSONs(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "\b\f\n\r\t\x00\x1f\x7f", "<a&b>", "\u2028\u2029", "é日本", "\xff\xfe", "a\xc3", "\U0001F600"} {
		for _, html := range []bool{false, true} {
			if got, want := AppendString(nil, s, html), marshal(t, s, html); !bytes.Equal(got, want) {
				t.Errorf("%q html=%v: %s, encoding/json %s", s, html, got, want)
			}
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "x", "<&>", "\u2028", "\xff", "\x00\"\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, html := range []bool{false, true} {
			if got, want := AppendString([]byte("k:"), s, html), append([]byte("k:"), marshal(t, s, html)...); !bytes.Equal(got, want) {
				t.Fatalf("%q html=%v: %s, encoding/json %s", s, html, got, want)
			}
		}
	})
}
