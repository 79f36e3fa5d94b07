package box

import (
	"bytes"
	"strings"
	"testing"
)

// TestEscapeCopyEndsAtTildeDotAtLineStart: "~." at the start of a line
// ends the copy (ssh's escape); "~~" sends one "~"; a "~" mid-line or before
// another key is sent as typed.
func TestEscapeCopyEndsAtTildeDotAtLineStart(t *testing.T) {
	for _, c := range []struct {
		in, sent string
		escaped  bool
	}{
		{"~.", "", true},
		{"ls\r~.rest", "ls\r", true},
		{"a~.b\r", "a~.b\r", false},
		{"~~.\r", "~.\r", false},
		{"~x\r~.", "~x\r", true},
		{"echo\n~.", "echo\n", true},
	} {
		var out bytes.Buffer
		escaped := false
		escapeCopy(&out, strings.NewReader(c.in), func() { escaped = true })
		if out.String() != c.sent || escaped != c.escaped {
			t.Errorf("%q: sent %q escaped %v, want %q %v", c.in, out.String(), escaped, c.sent, c.escaped)
		}
	}
}
