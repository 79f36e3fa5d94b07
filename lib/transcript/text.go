package transcript

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// How much of an entry Text shows before cutting (JSON keeps all).
const (
	maxPrompt      = 1500 // a user entry: often the whole briefing
	maxArgs        = 500
	maxThinking    = 500
	maxResultBytes = 1500
	maxResultLines = 12
)

// Printer writes entries for a reader: a header per step, tool results and
// long prompts cut (saying how much, and how to see it all), raw lines as
// they came.
type Printer struct {
	w    io.Writer
	last string // the kind printed last, "" before the first
}

// NewPrinter prints to w.
func NewPrinter(w io.Writer) *Printer { return &Printer{w: w} }

// Print writes one entry.
func (p *Printer) Print(e Entry) error {
	var b strings.Builder
	if p.last != "" && !(e.Kind == Raw && p.last == Raw) {
		b.WriteString("\n")
	}
	p.last = e.Kind
	switch e.Kind {
	case Raw:
		b.WriteString(e.Text)
		b.WriteString("\n")
	case User:
		b.WriteString("[user]\n")
		b.WriteString(para(prompt(e.Text)))
	case Assistant:
		b.WriteString("[assistant]\n")
		b.WriteString(para(e.Text))
	case Thinking:
		b.WriteString("[thinking]\n")
		b.WriteString(para(cut(e.Text, maxThinking, "\n", "")))
	case ToolCall:
		fmt.Fprintf(&b, "[tool %s] %s\n", name(e.Tool), oneLine(cut(e.Args, maxArgs, " ", "")))
	case ToolResult:
		status := "result"
		if e.IsError {
			status = "failed"
		}
		fmt.Fprintf(&b, "[%s %s]\n", status, name(e.Tool))
		b.WriteString(indent(cutLines(e.Text)))
	case Error:
		fmt.Fprintf(&b, "[error] %s\n", e.Text)
	default:
		fmt.Fprintf(&b, "[%s] %s\n", e.Kind, e.Text)
	}
	_, err := io.WriteString(p.w, b.String())
	return err
}

// briefingStart is how roster's briefing begins (lib/box writes it).
const briefingStart = "# Briefing for "

// prompt cuts a user entry. The briefing, every run's first prompt, is
// shown by its title alone: roster-runs context prints it whole.
func prompt(s string) string {
	if strings.HasPrefix(s, briefingStart) {
		title, rest, _ := strings.Cut(s, "\n")
		return fmt.Sprintf("%s\n… [the briefing, %d more bytes; roster-runs context RUN prints it]", title, len(rest))
	}
	return cut(s, maxPrompt, "\n", "roster-runs log --json shows it whole")
}

func name(tool string) string {
	if tool == "" {
		return "?"
	}
	return tool
}

// para ends s with one newline.
func para(s string) string { return strings.TrimRight(s, "\n") + "\n" }

// oneLine keeps a cut argument list on its line.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", `\n`) }

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "  (nothing)\n"
	}
	return "  " + strings.ReplaceAll(s, "\n", "\n  ") + "\n"
}

// cut keeps at most max bytes of s (never splitting a character) and says,
// after sep, how many more there were.
func cut(s string, max int, sep, hint string) string {
	if len(s) <= max {
		return s
	}
	keep := max
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	more := fmt.Sprintf("%s… [%d more bytes", sep, len(s)-keep)
	if hint != "" {
		more += "; " + hint
	}
	return s[:keep] + more + "]"
}

// cutLines keeps a tool result's first lines and bytes.
func cutLines(s string) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > maxResultLines {
		kept := strings.Join(lines[:maxResultLines], "")
		if len(kept) <= maxResultBytes {
			return kept + fmt.Sprintf("… [%d more lines]", len(lines)-maxResultLines)
		}
	}
	return cut(s, maxResultBytes, "\n", "")
}
