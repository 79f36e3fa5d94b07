package web

import (
	"bufio"
	"errors"
	"io"
)

// entry is one piece of a run's conversation as the run page renders it:
// Kind "user", "assistant", "tool_call", "tool_result", "error", "note"
// or "raw" (a line as it is).
type entry struct {
	Kind    string `json:"kind"`
	Text    string `json:"text,omitempty"`
	Tool    string `json:"tool,omitempty"`
	Args    string `json:"args,omitempty"`
	IsError bool   `json:"is_error,omitempty"`
}

// maxRawLine bounds one raw line held in memory; the rest of a longer
// line is said, not kept.
const maxRawLine = 64 << 10

// eachEntry calls fn for every entry of transcript r, in order, holding
// one line at a time. Until lib/transcript reads agents' event streams,
// every line is a raw entry (agent is not used yet).
func eachEntry(r io.Reader, agent string, fn func(entry) error) error {
	_ = agent
	br := bufio.NewReaderSize(r, maxRawLine)
	for {
		line, err := br.ReadSlice('\n')
		long := errors.Is(err, bufio.ErrBufferFull)
		text := string(trimNL(line))
		skipped := 0
		for errors.Is(err, bufio.ErrBufferFull) {
			var more []byte
			more, err = br.ReadSlice('\n')
			skipped += len(more)
		}
		if long {
			text += " … (" + compact(int64(skipped)) + " more bytes of this line not shown)"
		}
		if len(line) > 0 {
			if ferr := fn(entry{Kind: "raw", Text: text}); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func trimNL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}
