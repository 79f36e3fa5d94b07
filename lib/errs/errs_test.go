package errs

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestCodeIsTheDocumentedTable(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
	}{
		{nil, 0},
		{errors.New("plain"), 1},
		{New(ErrUsage, "x"), 2},
		{&Candidates{What: "task", Prefix: "a", IDs: []string{"a1", "a2"}}, 2},
		{fmt.Errorf("open: %w", ErrNoHome), 10},
		{WithHint(New(ErrBusy, "x"), "wait"), 11},
		{New(ErrNotFound, "x"), 12},
		{New(ErrConflict, "x"), 13},
		{New(ErrRefused, "x"), 14},
		{ErrInterrupted, 130},
		{fmt.Errorf("run: %w", context.Canceled), 130},
		{&Exit{Code: 42}, 42},
	} {
		if got := Code(c.err); got != c.code {
			t.Errorf("Code(%v) = %d, want %d", c.err, got, c.code)
		}
	}
}
