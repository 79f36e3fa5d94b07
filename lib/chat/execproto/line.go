package execproto

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/roster-sh/roster/lib/chat"
)

// Limits of the protocol (doc.go).
const (
	// MaxLine bounds one line the bridge prints: a 1 MiB message and room
	// for its escaping and fields. A longer line is skipped whole.
	MaxLine = 1<<20 + 64<<10
	// MaxField bounds chat, from, id and ref.
	MaxField = 1024
	// MaxNick bounds a hello line's nick.
	MaxNick = 256
	// maxNote bounds what the adapter keeps of a bridge's error text.
	maxNote = 1024
)

// ErrLineTooLong is a line over MaxLine: it was skipped.
var ErrLineTooLong = errors.New("line too long")

// The kinds of line a bridge prints.
const (
	typeMessage = "message"
	typeSent    = "sent"
	typeError   = "error"
	typeHello   = "hello"
)

// event is one decoded line from the bridge.
type event struct {
	kind string // typeMessage, typeSent, typeError or typeHello
	msg  chat.Inbound
	ref  string // sent, error
	id   string // sent: the network id ("" when the bridge gave none)
	err  string // error: the bridge's words, cut to maxNote
	nick string // hello
}

// wire is a line as the bridge prints it; every field is optional to
// encoding/json, decodeLine says which are required.
type wire struct {
	Type         string  `json:"type"`
	Chat         string  `json:"chat"`
	From         string  `json:"from"`
	FromVerified bool    `json:"from_verified"`
	Text         *string `json:"text"`
	ID           string  `json:"id"`
	Room         bool    `json:"room"`
	At           string  `json:"at"`
	History      bool    `json:"history"`
	Ref          string  `json:"ref"`
	Error        string  `json:"error"`
	Nick         string  `json:"nick"`
}

// decodeLine reads one line the bridge printed. Its errors never quote
// the message's text: they are logged.
func decodeLine(b []byte) (event, error) {
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return event{}, fmt.Errorf("field %q has the wrong type", te.Field)
		}
		return event{}, errors.New("not a JSON object")
	}
	switch w.Type {
	case typeMessage:
		return decodeMessage(&w)
	case typeSent:
		if err := checkField("ref", w.Ref, MaxField); err != nil {
			return event{}, err
		}
		if w.ID != "" {
			if err := checkField("id", w.ID, MaxField); err != nil {
				return event{}, err
			}
		}
		return event{kind: typeSent, ref: w.Ref, id: w.ID}, nil
	case typeError:
		if w.Ref != "" {
			if err := checkField("ref", w.Ref, MaxField); err != nil {
				return event{}, err
			}
		}
		msg := cut(strings.ToValidUTF8(w.Error, "\uFFFD"), maxNote)
		if msg == "" {
			msg = "(no reason given)"
		}
		return event{kind: typeError, ref: w.Ref, err: msg}, nil
	case typeHello:
		if err := checkField("nick", w.Nick, MaxNick); err != nil {
			return event{}, err
		}
		return event{kind: typeHello, nick: w.Nick}, nil
	case "":
		return event{}, errors.New("no type")
	}
	return event{}, fmt.Errorf("unknown type %q", cut(w.Type, 40))
}

// decodeMessage checks a message line and applies the "~" rule: an
// unverified identity always starts with "~", a verified one never does.
func decodeMessage(w *wire) (event, error) {
	for _, f := range []struct{ name, val string }{{"id", w.ID}, {"chat", w.Chat}, {"from", w.From}} {
		if err := checkField(f.name, f.val, MaxField); err != nil {
			return event{}, err
		}
	}
	if w.Text == nil {
		return event{}, errors.New("message without text")
	}
	from := w.From
	switch {
	case w.FromVerified && strings.HasPrefix(from, "~"):
		return event{}, errors.New(`a verified identity may not start with "~"`)
	case !w.FromVerified && !strings.HasPrefix(from, "~"):
		from = "~" + from
	}
	m := chat.Inbound{Chat: w.Chat, Room: w.Room, From: from, Verified: w.FromVerified,
		Text: *w.Text, NetID: w.ID, History: w.History}
	if w.At != "" {
		at, err := time.Parse(time.RFC3339, w.At)
		if err != nil {
			return event{}, errors.New("at is not an RFC 3339 time")
		}
		m.At = at
	}
	return event{kind: typeMessage, msg: m}, nil
}

// checkField refuses an empty, overlong or control-character-bearing
// identity field (they end up in names and logs).
func checkField(name, s string, max int) error {
	switch {
	case s == "":
		return fmt.Errorf("no %s", name)
	case len(s) > max:
		return fmt.Errorf("%s longer than %d bytes", name, max)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s is not UTF-8", name)
	case strings.ContainsFunc(s, unicode.IsControl):
		return fmt.Errorf("%s holds a control character", name)
	}
	return nil
}

// cut shortens s to at most n bytes at a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// The lines roster-chat writes to the bridge.
type sendLine struct {
	Type string `json:"type"` // "send"
	Chat string `json:"chat"`
	Text string `json:"text"`
	Ref  string `json:"ref"`
}

type ackLine struct {
	Type string `json:"type"` // "ack"
	ID   string `json:"id"`
}

// encodeLine is v as one JSON line (no raw newline can be in it: JSON
// escapes them).
func encodeLine(v any) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		panic(err) // only strings: cannot fail
	}
	return b.Bytes()
}

// lineReader reads newline-terminated lines of at most max bytes from r
// in bounded memory: a longer line is discarded as it arrives and
// reported as ErrLineTooLong, and reading goes on after it.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its newline (valid until the next
// call). A last line without a newline is returned too; then io.EOF.
func (l *lineReader) next() ([]byte, error) {
	l.buf = l.buf[:0]
	long, n := false, 0
	for {
		frag, err := l.r.ReadSlice('\n')
		n += len(frag)
		frag = bytes.TrimSuffix(frag, []byte("\n"))
		if !long && len(l.buf)+len(frag) > l.max {
			long, l.buf = true, l.buf[:0]
		}
		if !long {
			l.buf = append(l.buf, frag...)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && n > 0:
			// a last line without a newline: this call returns it
		case err != nil:
			return nil, err
		}
		if long {
			return nil, ErrLineTooLong
		}
		return l.buf, nil
	}
}
