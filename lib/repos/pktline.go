package repos

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// MaxPkt is the largest pkt-line git sends (65520 bytes with its length).
const MaxPkt = 65520

// ErrPkt is a request that does not follow git's pkt-line framing.
var ErrPkt = errors.New("malformed pkt-line")

// readPkt reads one pkt-line: its payload, or flush (nil payload, flush
// true). Delimiters and response-ends (0001, 0002) are not part of a push
// request and are refused.
func readPkt(r *bufio.Reader) (payload []byte, flush bool, err error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, false, fmt.Errorf("%w: the request ends inside its commands", ErrPkt)
		}
		return nil, false, err
	}
	n, err := strconv.ParseUint(string(head[:]), 16, 16)
	if err != nil || !isHex(head[:]) {
		return nil, false, fmt.Errorf("%w: length %q is not 4 hex digits", ErrPkt, clip(string(head[:]), 4))
	}
	switch {
	case n == 0:
		return nil, true, nil
	case n < 4:
		return nil, false, fmt.Errorf("%w: special packet %04x in a push's commands", ErrPkt, n)
	case n > MaxPkt:
		return nil, false, fmt.Errorf("%w: length %d over %d", ErrPkt, n, MaxPkt)
	}
	payload = make([]byte, n-4)
	if _, err := io.ReadFull(r, payload); err != nil {
		return nil, false, fmt.Errorf("%w: a packet cut short", ErrPkt)
	}
	return payload, false, nil
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// Command is one ref update of a push: Old or New all zeros is a create or
// a delete.
type Command struct {
	Old, New, Ref string
}

// Create and Delete tell the kind of update.
func (c Command) Create() bool { return isZero(c.Old) }
func (c Command) Delete() bool { return isZero(c.New) }

func isZero(id string) bool { return strings.Trim(id, "0") == "" }

// Push is the head of a receive-pack request: its commands, the client's
// capabilities, and the push options if it sent any.
type Push struct {
	Commands []Command
	Caps     []string
	Options  []string
	Cert     bool // a push certificate was sent (refused)
	Shallow  bool // shallow lines were sent (refused)
	Raw      []byte
}

// Has tells whether the client asked for capability c.
func (p *Push) Has(c string) bool {
	for _, x := range p.Caps {
		if x == c || strings.HasPrefix(x, c+"=") {
			return true
		}
	}
	return false
}

// MaxCommands bounds how many ref updates one push may hold.
const MaxCommands = 1000

// ReadPush reads a receive-pack request's commands (v0/v1: "OLD NEW
// REF\0CAPS", more "OLD NEW REF", a flush; then push options and a flush
// if the push-options capability was asked). What was read is kept in
// Raw, so the request can be handed to git whole: Raw, then the rest of r.
func ReadPush(r *bufio.Reader) (*Push, error) {
	var raw bytes.Buffer
	p := &Push{}
	br := &exact{r: r, raw: &raw}
	for i := 0; ; i++ {
		payload, flush, err := br.pkt()
		if err != nil {
			return nil, err
		}
		if flush {
			break
		}
		line := strings.TrimSuffix(string(payload), "\n")
		if i == 0 {
			var caps string
			line, caps, _ = strings.Cut(line, "\x00")
			p.Caps = strings.Fields(caps)
			if strings.HasPrefix(line, "push-cert") {
				p.Cert = true
				p.Raw = raw.Bytes()
				return p, nil
			}
		}
		if strings.HasPrefix(line, "shallow ") {
			p.Shallow = true
			continue
		}
		c, err := parseCommand(line)
		if err != nil {
			return nil, err
		}
		if len(p.Commands) == MaxCommands {
			return nil, fmt.Errorf("%w: more than %d ref updates in one push", ErrPkt, MaxCommands)
		}
		p.Commands = append(p.Commands, c)
	}
	if len(p.Commands) == 0 { // git's probe before a chunked push: a flush alone
		p.Raw = raw.Bytes()
		return p, nil
	}
	if p.Has("push-options") {
		for {
			payload, flush, err := br.pkt()
			if err != nil {
				return nil, err
			}
			if flush {
				break
			}
			if len(p.Options) == MaxCommands {
				return nil, fmt.Errorf("%w: too many push options", ErrPkt)
			}
			p.Options = append(p.Options, strings.TrimSuffix(string(payload), "\n"))
		}
	}
	p.Raw = raw.Bytes()
	return p, nil
}

// exact reads pkt-lines from r one byte range at a time (r is a
// bufio.Reader: its own buffer holds what follows), recording them.
type exact struct {
	r   *bufio.Reader
	raw *bytes.Buffer
}

func (e *exact) pkt() ([]byte, bool, error) {
	payload, flush, err := readPkt(e.r)
	if err != nil {
		return nil, false, err
	}
	if flush {
		e.raw.WriteString("0000")
	} else {
		fmt.Fprintf(e.raw, "%04x", len(payload)+4)
		e.raw.Write(payload)
	}
	return payload, flush, nil
}

// parseCommand reads "OLD NEW REF": object ids of 40 (SHA-1) or 64
// (SHA-256) lower-case hex digits of one length, and a ref name.
func parseCommand(line string) (Command, error) {
	f := strings.Split(line, " ")
	if len(f) != 3 {
		return Command{}, fmt.Errorf("%w: %q is not \"OLD NEW REF\"", ErrPkt, clip(line, 120))
	}
	c := Command{Old: f[0], New: f[1], Ref: f[2]}
	if !isOID(c.Old) || !isOID(c.New) || len(c.Old) != len(c.New) {
		return Command{}, fmt.Errorf("%w: %q: object ids are 40 or 64 lower-case hex digits", ErrPkt, clip(line, 120))
	}
	if c.Ref == "" || strings.ContainsAny(c.Ref, "\x00\n") {
		return Command{}, fmt.Errorf("%w: an empty ref name", ErrPkt)
	}
	return c, nil
}

func isOID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Pkt is s framed as one pkt-line.
func Pkt(s string) []byte { return []byte(fmt.Sprintf("%04x%s", len(s)+4, s)) }

// Flush is the flush packet.
var Flush = []byte("0000")
