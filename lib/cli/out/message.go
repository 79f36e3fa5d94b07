package out

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/roster-sh/roster/lib/errs"
)

// Env is what a command's Run method writes to.
type Env struct {
	Name   string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Ctx    context.Context
}

// Message prints one "PROG: KIND: msg" line on w, KIND being error, hint,
// note or warning (refused: an action's refusals, in a box), with msg
// escaped for a terminal (Printable). Every such line of the suite is made
// here but the roster wrapper's (cmd/roster's say).
func Message(w io.Writer, prog, kind, msg string) {
	fmt.Fprintf(w, "%s: %s: %s\n", prog, kind, Printable(msg))
}

// Error prints "NAME: error: msg" on stderr.
func (e *Env) Error(format string, args ...any) {
	Message(e.Stderr, e.Name, "error", fmt.Sprintf(format, args...))
}

// Hint prints "NAME: hint: msg" on stderr.
func (e *Env) Hint(format string, args ...any) {
	Message(e.Stderr, e.Name, "hint", fmt.Sprintf(format, args...))
}

// Note prints "NAME: note: msg" on stderr.
func (e *Env) Note(format string, args ...any) {
	Message(e.Stderr, e.Name, "note", fmt.Sprintf(format, args...))
}

// Warn prints "NAME: warning: msg" on stderr.
func (e *Env) Warn(format string, args ...any) {
	Message(e.Stderr, e.Name, "warning", fmt.Sprintf(format, args...))
}

// Report prints err as "error:"/"hint:" lines (nothing for errs.Exit),
// escaped for a terminal, and returns its exit code.
func Report(env *Env, err error) int {
	if err == nil {
		return 0
	}
	var exit *errs.Exit
	if errors.As(err, &exit) {
		return exit.Code
	}
	env.Error("%s", err.Error())
	var cand *errs.Candidates
	if errors.As(err, &cand) {
		for i, id := range cand.IDs {
			if i == errs.MaxCandidates {
				env.Hint("and %d more; give more of the id", len(cand.IDs)-i)
				break
			}
			env.Hint("candidate %s", id)
		}
	}
	if h := errs.HintOf(err); h != "" {
		env.Hint("%s", h)
	}
	return errs.Code(err)
}

// Failures is what a command that goes on past failures (one worker of
// several, one run folder of many) keeps: each failure is reported as it
// comes, and the command exits with the first one's code.
type Failures struct {
	first error
}

// Report reports err (see Report) and keeps it if it is the first.
func (f *Failures) Report(env *Env, err error) {
	Report(env, err)
	if f.first == nil {
		f.first = err
	}
}

// Exit is nil with no failure, else an errs.Exit with the first
// failure's code (its lines are already printed).
func (f *Failures) Exit() error {
	if f.first == nil {
		return nil
	}
	return &errs.Exit{Code: errs.Code(f.first)}
}
