package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The kinds of Entry.
const (
	User       = "user"        // a prompt: the briefing, a relayed message
	Assistant  = "assistant"   // the model's text
	Thinking   = "thinking"    // the model's reasoning, where the agent shows it
	ToolCall   = "tool_call"   // a tool the model called, with its arguments
	ToolResult = "tool_result" // what the tool gave back
	Error      = "error"       // the agent or the model failed
	Note       = "note"        // the agent's own bookkeeping: session, result
	Raw        = "raw"         // a line that is not an agent event, as it came
)

// MaxLine is the longest line a Reader decodes (16 MiB); a longer one is
// skipped and stands as one raw entry saying how long it was.
const MaxLine = 16 << 20

// Entry is one step of the conversation.
type Entry struct {
	Kind    string `json:"kind"`
	Text    string `json:"text,omitempty"`
	Tool    string `json:"tool,omitempty"`     // tool_call, tool_result: the tool's name
	ID      string `json:"id,omitempty"`       // tool_call, tool_result: the call's id
	Args    string `json:"args,omitempty"`     // tool_call: its arguments, compact JSON
	IsError bool   `json:"is_error,omitempty"` // tool_result: the tool failed
	Line    int    `json:"line"`               // the transcript line it came from (from 1)
}

// Reader reads entries from a transcript.
type Reader struct {
	br      *bufio.Reader
	line    int
	pending []Entry
	err     error
	dec     decoder
}

// NewReader reads the transcript r. agent is the run's agent ("pi",
// "claude") or "" when it is not known; each line is recognised by its own
// event type either way, so a mixed or unknown transcript reads too.
func NewReader(r io.Reader, agent string) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next entry, or io.EOF after the last one.
func (r *Reader) Next() (Entry, error) {
	for len(r.pending) == 0 {
		if r.err != nil {
			return Entry{}, r.err
		}
		line, err := r.readLine()
		if err != nil {
			r.err = err
			if len(line) == 0 {
				continue
			}
		}
		r.line++
		r.pending = r.dec.decode(line, r.line)
	}
	e := r.pending[0]
	r.pending = r.pending[1:]
	return e, nil
}

// readLine returns the next line without its newline. A line longer than
// MaxLine is drained and replaced by a note of its length.
func (r *Reader) readLine() ([]byte, error) {
	var buf []byte
	n := 0
	for {
		chunk, err := r.br.ReadSlice('\n')
		n += len(chunk)
		if n <= MaxLine {
			buf = append(buf, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if n > MaxLine {
			if err == nil {
				n-- // the newline
			}
			buf = []byte(fmt.Sprintf("[roster: a line of %d bytes, too long to render: roster-runs log --raw shows it]", n))
		}
		return bytes.TrimSuffix(buf, []byte("\n")), err
	}
}

// decoder turns one line into its entries. It remembers each tool call's
// name by its id (bounded), since Claude Code's results name only the id.
type decoder struct {
	tools map[string]string
}

// maxTools bounds the id → name memory; past it, older names are forgotten.
const maxTools = 4096

func (d *decoder) remember(id, name string) {
	if d.tools == nil || len(d.tools) >= maxTools {
		d.tools = make(map[string]string)
	}
	d.tools[id] = name
}

func (d *decoder) decode(line []byte, n int) []Entry {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(trimmed, &head) == nil {
			if es, ok := d.decodePi(head.Type, trimmed, n); ok {
				return es
			}
			if es, ok := d.decodeClaude(head.Type, trimmed, n); ok {
				return es
			}
		}
	}
	return []Entry{{Kind: Raw, Text: string(line), Line: n}}
}
