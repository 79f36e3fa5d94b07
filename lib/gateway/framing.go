package gateway

import (
	"bytes"
	"strconv"
	"sync/atomic"
)

// framing follows the HTTP/1.1 message framing of the bytes a box sends on
// one connection, as they are read, to see what net/http hides: a request
// head holding both Content-Length and Transfer-Encoding, or a header line
// folded onto the next (obs-fold). net/http accepts both (it drops
// Content-Length, as RFC 9112 permits, and joins folded lines); the
// gateway refuses them, since a request that two parsers could frame
// differently is a smuggling attempt, never an agent's honest request.
//
// It tracks heads and bodies (Content-Length or chunked) so that it sees
// every head of a kept-alive connection. When it cannot follow (a CONNECT
// or Upgrade head, a line past its bound, a malformed length) it stops and
// says so: the gateway then closes the connection after the current
// answer, so no request goes unseen.
type framing struct {
	ambiguous atomic.Bool // a head held both headers or a folded line: refuse, close
	lost      atomic.Bool // no longer following: close after this answer

	state   int
	line    []byte
	maxHead int
	head    int // bytes of the current head so far
	reqLine bool
	hasCL   bool
	hasTE   bool
	upgrade bool
	connect bool
	folded  bool
	cl      int64
	remain  int64
}

const (
	fHead = iota
	fBody
	fChunkSize
	fChunkData
	fChunkEnd
	fTrailer
	fStopped
)

const maxFramingLine = 8 << 10

func newFraming(maxHead int) *framing { return &framing{maxHead: maxHead} }

func (f *framing) stop(lost bool) {
	f.state = fStopped
	f.line = nil
	if lost {
		f.lost.Store(true)
	}
}

func (f *framing) feed(p []byte) {
	for len(p) > 0 && f.state != fStopped {
		switch f.state {
		case fBody, fChunkData:
			n := int64(len(p))
			if n > f.remain {
				n = f.remain
			}
			f.remain -= n
			p = p[n:]
			if f.remain == 0 {
				if f.state == fBody {
					f.state = fHead
				} else {
					f.state = fChunkEnd
				}
			}
			continue
		}
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		limit := maxFramingLine
		if f.state == fHead {
			// the head's bytes so far, its newlines counted once each
			// whatever the reads split them into
			f.head += len(chunk)
			if i >= 0 {
				f.head++
			}
			if f.head > f.maxHead {
				f.stop(true) // net/http answers 431 and closes
				return
			}
			limit = f.maxHead
		}
		if len(f.line)+len(chunk) > limit {
			f.stop(true)
			return
		}
		if i >= 0 && len(f.line) == 0 {
			// the whole line is in p: read it there, uncopied
			p = p[i+1:]
			f.onLine(bytes.TrimSuffix(chunk, []byte("\r")))
			continue
		}
		f.line = append(f.line, chunk...)
		if i < 0 {
			return
		}
		p = p[i+1:]
		line := bytes.TrimSuffix(f.line, []byte("\r"))
		f.onLine(line)
		f.line = f.line[:0]
	}
}

func (f *framing) onLine(line []byte) {
	switch f.state {
	case fHead:
		if !f.reqLine {
			if len(line) == 0 {
				f.head = 0
				return // a stray blank line between requests
			}
			f.reqLine = true
			f.connect = bytes.HasPrefix(line, []byte("CONNECT "))
			return
		}
		if len(line) > 0 {
			if line[0] == ' ' || line[0] == '\t' {
				f.folded = true // obs-fold: net/http joins it to the line before
				return
			}
			name, value, ok := bytes.Cut(line, []byte(":"))
			if !ok {
				return
			}
			switch {
			case bytes.EqualFold(name, []byte("Content-Length")):
				n, err := strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64)
				if err != nil || n < 0 {
					f.cl = -1
				} else if !f.hasCL {
					f.cl = n
				}
				f.hasCL = true
			case bytes.EqualFold(name, []byte("Transfer-Encoding")):
				f.hasTE = true
			case bytes.EqualFold(name, []byte("Upgrade")):
				f.upgrade = true
			}
			return
		}
		// End of the head.
		hasCL, hasTE, cl := f.hasCL, f.hasTE, f.cl
		connect, upgrade, folded := f.connect, f.upgrade, f.folded
		f.reqLine, f.hasCL, f.hasTE, f.upgrade, f.connect, f.folded, f.cl, f.head = false, false, false, false, false, false, 0, 0
		switch {
		case hasCL && hasTE, folded:
			f.ambiguous.Store(true)
			f.stop(true)
		case connect:
			f.stop(false) // a tunnel follows (or the refusal, then close)
		case upgrade:
			f.stop(true)
		case hasTE:
			f.state = fChunkSize
		case hasCL && cl < 0:
			f.stop(true) // net/http refuses it too
		case hasCL && cl > 0:
			f.state, f.remain = fBody, cl
		}
	case fChunkSize:
		size := line
		if i := bytes.IndexAny(size, "; \t"); i >= 0 {
			size = size[:i]
		}
		n, err := strconv.ParseInt(string(size), 16, 64)
		if err != nil || n < 0 {
			f.stop(true)
			return
		}
		if n == 0 {
			f.state = fTrailer
		} else {
			f.state, f.remain = fChunkData, n
		}
	case fChunkEnd:
		if len(line) != 0 {
			f.stop(true)
			return
		}
		f.state = fChunkSize
	case fTrailer:
		if len(line) == 0 {
			f.state = fHead
		}
	}
}
