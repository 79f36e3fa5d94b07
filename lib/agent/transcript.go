package agent

import (
	"bytes"
	"io"
)

// TranscriptFilter returns what the box's output goes through on its way
// into the transcript of an agent's headless run. For pi it leaves out the
// message_update events: each repeats the whole message so far at every
// streamed delta (an 8 KiB answer makes megabytes of them), and the
// message_end after them holds the message whole, so a long session would
// otherwise fill the transcript's bound with repeats. Everything else
// passes as it came. One filter serves one output stream.
func TranscriptFilter(name string, w io.Writer) io.Writer {
	if name != "pi" {
		return w
	}
	return &updateFilter{w: w}
}

// piUpdatePrefix is how pi starts every message_update line.
const piUpdatePrefix = `{"type":"message_update"`

// updateFilter drops the lines that start with piUpdatePrefix, deciding
// from at most the prefix's length of each line (so it holds no more).
type updateFilter struct {
	w       io.Writer
	head    []byte // the line's start, while it may still be the prefix
	decided bool
	drop    bool
}

func (f *updateFilter) Write(p []byte) (int, error) {
	n := len(p)
	var err error
	emit := func(b []byte) {
		if _, werr := f.w.Write(b); werr != nil && err == nil {
			err = werr
		}
	}
	for len(p) > 0 {
		if !f.decided {
			// Take bytes while the line's start can still be the prefix.
			for len(p) > 0 && len(f.head) < len(piUpdatePrefix) && p[0] == piUpdatePrefix[len(f.head)] {
				f.head = append(f.head, p[0])
				p = p[1:]
			}
			if len(f.head) == len(piUpdatePrefix) {
				f.decided, f.drop = true, true
			} else if len(p) > 0 { // a byte that does not match: the line passes
				f.decided = true
				emit(f.head)
			} else {
				break // all of p matched so far: wait for more
			}
			f.head = f.head[:0]
			continue
		}
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if !f.drop {
				emit(p)
			}
			break
		}
		if !f.drop {
			emit(p[:i+1])
		}
		p = p[i+1:]
		f.decided, f.drop = false, false
	}
	return n, err
}
