package web

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/roster-sh/roster/lib/transcript"
)

// entry is one step of a run's conversation as the run page renders it:
// lib/transcript's entry (user, assistant, thinking, tool_call,
// tool_result, error, note, or raw: a line as it came), its long parts
// cut as `roster-runs log` cuts them.
type entry struct {
	Kind    string `json:"kind"`
	Label   string `json:"label,omitempty"` // "user", "tool read", "failed bash", ...; "" for raw lines
	Text    string `json:"text,omitempty"`
	Args    string `json:"args,omitempty"`
	IsError bool   `json:"is_error,omitempty"`
}

// How much of a long entry the page shows; `roster-runs log --json`
// prints every entry whole.
const (
	maxShown    = 16 << 10 // a prompt, an assistant's text, a tool's result
	maxThinking = 4 << 10
	maxArgs     = 2 << 10
)

// briefingStart is how roster's briefing begins (lib/box writes it): a
// run's first prompt is shown by its title alone.
const briefingStart = "# Briefing for "

// eachEntry calls fn for every entry of transcript r, in order, as
// lib/transcript reads it: one line at a time, never the file whole.
func eachEntry(r io.Reader, agent string, fn func(entry) error) error {
	tr := transcript.NewReader(r, agent)
	for {
		e, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(shown(e)); err != nil {
			return err
		}
	}
}

// shown is e as the page shows it.
func shown(e transcript.Entry) entry {
	out := entry{Kind: e.Kind, Text: e.Text, IsError: e.IsError, Label: e.Kind}
	tool := e.Tool
	if tool == "" {
		tool = "?"
	}
	switch e.Kind {
	case transcript.Raw:
		out.Label = ""
	case transcript.User:
		if strings.HasPrefix(e.Text, briefingStart) {
			title, rest, _ := strings.Cut(e.Text, "\n")
			out.Text = fmt.Sprintf("%s\n… [the briefing, %d more bytes; roster-runs context RUN prints it]", title, len(rest))
		} else {
			out.Text = cut(e.Text, maxShown)
		}
	case transcript.Thinking:
		out.Text = cut(e.Text, maxThinking)
	case transcript.ToolCall:
		out.Label = "tool " + tool
		out.Args = cut(e.Args, maxArgs)
	case transcript.ToolResult:
		out.Label = "result " + tool
		if e.IsError {
			out.Label = "failed " + tool
		}
		out.Text = cut(e.Text, maxShown)
	default:
		out.Text = cut(e.Text, maxShown)
	}
	return out
}

// cut keeps the first n bytes of s (on a rune boundary) and says how
// many more there were.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8Start(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf("\n… [%d more bytes; roster-runs log --json prints it whole]", len(s)-i)
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
