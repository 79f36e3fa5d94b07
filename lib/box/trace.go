package box

import (
	"context"
	"sync"
	"time"
)

// Trace records when a run passes each step of its start and end, for
// `ROSTER_BOX_TRACE=1 roster-box run` (roster-box(1)): where a box's time
// goes, measured rather than guessed. A nil *Trace records nothing.
type Trace struct {
	mu    sync.Mutex
	marks []Mark
}

// Mark is one step passed: its name and when.
type Mark struct {
	Step string
	At   time.Time
}

type traceKey struct{}

// WithTrace returns ctx carrying t: every step of a run supervised or
// launched with it is marked in t.
func WithTrace(ctx context.Context, t *Trace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

// Mark records that step was passed now.
func (t *Trace) Mark(step string) {
	if t == nil {
		return
	}
	now := time.Now()
	t.mu.Lock()
	t.marks = append(t.marks, Mark{step, now})
	t.mu.Unlock()
}

// Marks is every step recorded so far, in order.
func (t *Trace) Marks() []Mark {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Mark(nil), t.marks...)
}

// mark records step in ctx's trace, if it carries one.
func mark(ctx context.Context, step string) {
	t, _ := ctx.Value(traceKey{}).(*Trace)
	t.Mark(step)
}

// TraceMark records step in ctx's trace, if it carries one (for the
// steps a caller takes between the library's).
func TraceMark(ctx context.Context, step string) { mark(ctx, step) }
