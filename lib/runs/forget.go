package runs

import (
	"fmt"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// Served returns the ids of w's runs that served channel: those whose
// run.json names it, and those of extra (runs a task of the channel was
// claimed for, known from the journal) that still have a folder. A run
// whose run.json cannot be read is refused (exit 14): forgetting must not
// guess.
func Served(w home.Worker, channel string, extra map[string]bool) ([]string, error) {
	ids, err := IDs(w)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, id := range ids {
		if extra[id] {
			out = append(out, id)
			continue
		}
		e := Load(w, id)
		if e.Err != nil {
			return nil, errs.WithHint(fmt.Errorf("run %s: %w", id, e.Err),
				"look at it with `roster-runs show "+id+"`; move or delete the folder by hand, then forget again")
		}
		if e.Record != nil && e.Record.Channel == channel {
			out = append(out, id)
		}
	}
	return out, nil
}

// RemoveRun deletes run folder id of w: renamed out of every listing first
// (one atomic step), then removed. A crash between leaves a trash folder
// that RemoveTrash (and every prune) deletes.
func RemoveRun(w home.Worker, id string) error { return removeRun(w, id) }

// RemoveTrash deletes what a killed RemoveRun or prune left in w's runs/.
func RemoveTrash(w home.Worker) { removeTrash(w) }
