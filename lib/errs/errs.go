package errs

import (
	"context"
	"errors"
)

// The kinds, one per documented exit code (docs/tools.md, "Output and exit codes").
var (
	ErrUsage       = errors.New("usage")       // exit 2: bad flag, argument, name, ambiguous prefix
	ErrNoHome      = errors.New("no home")     // exit 10: data/ missing or no such worker
	ErrBusy        = errors.New("busy")        // exit 11: a lock is held
	ErrNotFound    = errors.New("not found")   // exit 12
	ErrConflict    = errors.New("conflict")    // exit 13
	ErrRefused     = errors.New("refused")     // exit 14: unreadable data
	ErrInterrupted = errors.New("interrupted") // exit 130
)

// Exit codes (docs/tools.md).
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 2
	ExitNoHome      = 10
	ExitBusy        = 11
	ExitNotFound    = 12
	ExitConflict    = 13
	ExitRefused     = 14
	ExitInterrupted = 130
)

// Code maps an error to its exit code: the one switch of the suite.
func Code(err error) int {
	var exit *Exit
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &exit):
		return exit.Code
	case errors.Is(err, ErrUsage):
		return ExitUsage
	case errors.Is(err, ErrNoHome):
		return ExitNoHome
	case errors.Is(err, ErrBusy):
		return ExitBusy
	case errors.Is(err, ErrNotFound):
		return ExitNotFound
	case errors.Is(err, ErrConflict):
		return ExitConflict
	case errors.Is(err, ErrRefused):
		return ExitRefused
	case errors.Is(err, ErrInterrupted), errors.Is(err, context.Canceled):
		return ExitInterrupted
	}
	return ExitFailure
}

// Kind is an error of one of the kinds above with its own message: Error()
// returns only the message, errors.Is matches the kind.
type Kind struct {
	Msg  string
	Kind error
}

func (e *Kind) Error() string { return e.Msg }
func (e *Kind) Unwrap() error { return e.Kind }

// New returns an error of the given kind whose text is msg alone.
func New(kind error, msg string) error { return &Kind{Msg: msg, Kind: kind} }

// Hinted carries a hint for the person reading the error.
type Hinted struct {
	Err  error
	Hint string
}

func (e *Hinted) Error() string { return e.Err.Error() }
func (e *Hinted) Unwrap() error { return e.Err }

// WithHint attaches a hint line to err (nil stays nil).
func WithHint(err error, hint string) error {
	if err == nil {
		return nil
	}
	return &Hinted{Err: err, Hint: hint}
}

// HintOf returns the outermost hint attached to err, or "".
func HintOf(err error) string {
	var h *Hinted
	if errors.As(err, &h) {
		return h.Hint
	}
	return ""
}

// Candidates is an ambiguous-prefix error: it lists what the prefix (or
// suffix) matched, all of it; a printer shows the first MaxCandidates and
// how many more.
type Candidates struct {
	What   string // "task", "run", "snapshot"
	Prefix string
	IDs    []string
}

// MaxCandidates is how many of an ambiguous id's matches are listed.
const MaxCandidates = 10

func (e *Candidates) Error() string {
	return e.What + " \"" + e.Prefix + "\" is ambiguous: it matches " + itoa(len(e.IDs)) + " ids"
}
func (e *Candidates) Unwrap() error { return ErrUsage }

// Exit asks the program to exit with Code without printing anything: a child's
// status passed through (roster-lock), or a "no" from a yes/no question.
type Exit struct{ Code int }

func (e *Exit) Error() string { return "exit status " + itoa(e.Code) }

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
