package snap

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/home"
)

// SweepResult is one worker's outcome in a sweep.
type SweepResult struct {
	Worker string
	Result *Result // nil when Err is set
	Err    error
}

// Sweep takes a snapshot of every named worker (every worker of h when
// names is empty) whose store changed, carrying on past workers it cannot
// serve: a spec that cannot be read, a busy store, a failed take. A worker
// with no store yet (never run) is skipped (Result.NoStore). Each take
// also finishes deleting .trash/ trees once no box of the worker is live.
func Sweep(ctx context.Context, h home.Home, names []string, opt Options) ([]SweepResult, error) {
	if len(names) == 0 {
		var err error
		if names, err = config.ListWorkers(h); err != nil {
			return nil, err
		}
	}
	out := make([]SweepResult, 0, len(names))
	_, specErrs := config.LoadWorkers(h, names) // each spec read once, not once per other worker
	for i, n := range names {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if err := specErrs[i]; err != nil {
			out = append(out, SweepResult{Worker: n, Err: err})
			continue
		}
		if _, err := os.Stat(h.Worker(n).Store()); errors.Is(err, fs.ErrNotExist) {
			// Never run (a spec only, no store yet): nothing to snapshot,
			// and nothing wrong.
			out = append(out, SweepResult{Worker: n, Result: &Result{NoStore: true}})
			continue
		}
		r, err := Take(ctx, h.Worker(n), opt)
		out = append(out, SweepResult{Worker: n, Result: r, Err: err})
	}
	return out, nil
}
