package execproto

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestDecodeLine(t *testing.T) {
	for _, c := range []struct {
		line string
		want string // "" = refused
	}{
		{`{"type":"message","id":"1","chat":"a","from":"a","from_verified":true,"text":"hi"}`, "message a a true hi 1"},
		{`{"type":"message","id":"1","chat":"a","from":"a","text":"hi"}`, "message a ~a false hi 1"},
		{`{"type":"message","id":"1","chat":"a","from":"~a","text":""}`, "message a ~a false  1"},
		{`{"type":"message","id":"1","chat":"a","from":"~a","from_verified":true,"text":"hi"}`, ""},
		{`{"type":"message","chat":"a","from":"a","from_verified":true,"text":"hi"}`, ""},
		{`{"type":"message","id":"","chat":"a","from":"a","text":"hi"}`, ""},
		{`{"type":"message","id":"1","from":"a","text":"hi"}`, ""},
		{`{"type":"message","id":"1","chat":"a","text":"hi"}`, ""},
		{`{"type":"message","id":"1","chat":"a","from":"a"}`, ""},
		{`{"type":"message","id":"1","chat":"a","from":"a\n","text":"x"}`, ""},
		{`{"type":"message","id":"` + strings.Repeat("i", MaxField+1) + `","chat":"a","from":"a","text":"x"}`, ""},
		{`{"type":"message","id":"1","chat":"a","from":"a","text":"x","at":"2026-05-01 09:30"}`, ""},
		{`{"type":"message","id":"1","chat":"a","from":"a","text":"x","at":"2026-05-01T09:30:00.5Z"}`, "message a ~a false x 1"},
		{`{"type":"message","id":1,"chat":"a","from":"a","text":"x"}`, ""},
		{`{"Type":"MESSAGE","id":"1","chat":"a","from":"a","text":"x"}`, ""},
		{`{"type":"sent","ref":"7","id":"n1"}`, "sent 7 n1"},
		{`{"type":"sent","ref":"7"}`, "sent 7 "},
		{`{"type":"sent","id":"n1"}`, ""},
		{`{"type":"error","ref":"7","error":"nope"}`, "error 7 nope"},
		{`{"type":"error","error":"down"}`, "error  down"},
		{`{"type":"error","ref":"7"}`, "error 7 (no reason given)"},
		{`{"type":"hello","nick":"dobby"}`, "hello dobby"},
		{`{"type":"hello"}`, ""},
		{`{"type":"ack","id":"1"}`, ""},
		{`{"id":"1"}`, ""},
		{`null`, ""},
		{`[1]`, ""},
		{`{"type":"message"`, ""},
		{``, ""},
	} {
		ev, err := decodeLine([]byte(c.line))
		got := ""
		if err == nil {
			switch ev.kind {
			case typeMessage:
				m := ev.msg
				got = strings.Join([]string{ev.kind, m.Chat, m.From, map[bool]string{true: "true", false: "false"}[m.Verified], m.Text, m.NetID}, " ")
			case typeSent:
				got = strings.Join([]string{ev.kind, ev.ref, ev.id}, " ")
			case typeError:
				got = strings.Join([]string{ev.kind, ev.ref, ev.err}, " ")
			case typeHello:
				got = ev.kind + " " + ev.nick
			}
		}
		if got != c.want {
			t.Errorf("decodeLine(%.80s) = %q (%v), want %q", c.line, got, err, c.want)
		}
	}
	ev, _ := decodeLine([]byte(`{"type":"message","id":"1","chat":"#ops","room":true,"from":"a","text":"x","at":"2026-05-01T09:30:00+02:00","history":true}`))
	if m := ev.msg; !m.Room || !m.History || !m.At.Equal(time.Date(2026, 5, 1, 7, 30, 0, 0, time.UTC)) {
		t.Errorf("room, history, at: %+v", m)
	}
}

// endless is n bytes of 'x' without a newline, then "\nnext\n".
type endless struct{ n int }

func (e *endless) Read(p []byte) (int, error) {
	if e.n < 0 {
		return 0, io.EOF
	}
	if e.n == 0 {
		e.n = -1
		return copy(p, "\nnext\n"), nil
	}
	k := min(len(p), e.n)
	for i := range k {
		p[i] = 'x'
	}
	e.n -= k
	return k, nil
}

func TestLineReaderBoundsMemoryAndSkipsLongLines(t *testing.T) {
	lr := newLineReader(&endless{n: 64 << 20}, MaxLine)
	if _, err := lr.next(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("a 64 MiB line: %v, want ErrLineTooLong", err)
	}
	if cap(lr.buf) > 2*MaxLine {
		t.Errorf("buffer grew to %d bytes for a 64 MiB line (bound 2×%d)", cap(lr.buf), MaxLine)
	}
	if b, err := lr.next(); err != nil || string(b) != "next" {
		t.Fatalf("line after the long one = %q, %v", b, err)
	}
	if _, err := lr.next(); err != io.EOF {
		t.Fatalf("at the end: %v", err)
	}
	lr = newLineReader(strings.NewReader(strings.Repeat("a", 100)+"\n"+strings.Repeat("b", 101)+"\nlast"), 100)
	for _, want := range []string{strings.Repeat("a", 100), "ERR", "last", "EOF"} {
		b, err := lr.next()
		got := string(b)
		switch {
		case errors.Is(err, ErrLineTooLong):
			got = "ERR"
		case err == io.EOF:
			got = "EOF"
		}
		if got != want {
			t.Fatalf("got %.20q (%v), want %.20q", got, err, want)
		}
	}
}

// FuzzLine: decoding never panics, never accepts a message without an
// id, and an accepted message's identity keeps the "~" rule; the line
// reader never returns a line over its bound.
func FuzzLine(f *testing.F) {
	for _, s := range []string{
		`{"type":"message","id":"1","chat":"a","from":"a","from_verified":true,"text":"hi"}`,
		`{"type":"message","id":"1","chat":"a","from":"~a","text":"hi","room":true,"at":"2026-05-01T09:30:00Z"}`,
		`{"type":"message","id":"1","chat":"b","from":"b","text":"x"}`,
		`{"type":"message","id":"1","chat":"b","from":"~b","from_verified":true,"text":"x"}`,
		`{"type":"sent","ref":"1","id":"x"}`, `{"type":"error","ref":"1","error":"e"}`, `{"type":"hello","nick":"n"}`,
		"{\"type\":\"message\"}\n\n{}", "\xff\xfe", `{"type":"message","id":"\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := decodeLine(b)
		if err == nil && ev.kind == typeMessage {
			m := ev.msg
			if m.NetID == "" || m.Chat == "" {
				t.Fatalf("accepted a message without id or chat: %+v", m)
			}
			if m.Verified == strings.HasPrefix(m.From, "~") {
				t.Fatalf("the ~ rule broken: from %q verified %v", m.From, m.Verified)
			}
		}
		if err == nil && ev.kind == typeSent && ev.ref == "" {
			t.Fatal("accepted a sent line without ref")
		}
		lr := newLineReader(bytes.NewReader(b), 16)
		for {
			l, err := lr.next()
			if err != nil && !errors.Is(err, ErrLineTooLong) {
				break
			}
			if len(l) > 16 {
				t.Fatalf("a line of %d bytes over the bound of 16", len(l))
			}
		}
	})
}
