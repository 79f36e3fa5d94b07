package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/roster-sh/roster/lib/cli/out"
)

// The printers but JSONLine are lib/cli/out's; these names keep every
// program's cli.Table, cli.Report and the rest.

// Failures keeps the first of several failures (out.Failures).
type Failures = out.Failures

// PrintableWriter escapes a stream for a terminal (out.PrintableWriter).
type PrintableWriter = out.PrintableWriter

// Message prints one "PROG: KIND: msg" line (out.Message).
func Message(w io.Writer, prog, kind, msg string) { out.Message(w, prog, kind, msg) }

// Report prints err and returns its exit code (out.Report).
func Report(env *Env, err error) int { return out.Report(env, err) }

// Table prints an aligned table (out.Table).
func Table(w io.Writer, header []string, rows [][]string) error { return out.Table(w, header, rows) }

// Printable escapes s for a terminal (out.Printable).
func Printable(s string) string { return out.Printable(s) }

// PrintableText is Printable keeping newlines and tabs (out.PrintableText).
func PrintableText(s string) string { return out.PrintableText(s) }

// IsTerminal reports whether w is a terminal (out.IsTerminal).
func IsTerminal(w io.Writer) bool { return out.IsTerminal(w) }

// NewPrintableWriter returns a PrintableWriter writing to w (out.NewPrintableWriter).
func NewPrintableWriter(w io.Writer) *PrintableWriter { return out.NewPrintableWriter(w) }

// JSONLine prints v as one compact JSON object and a newline (JSON Lines).
func JSONLine(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// IEC is n bytes for a reader: 512 B, 45.9 MiB, 1.2 TiB.
func IEC(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
