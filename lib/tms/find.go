package tms

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// Found is a task id resolved to its worker.
type Found struct {
	Worker string
	ID     string
}

// FindTask resolves a task id, unique prefix (the "t-" may be left out)
// or random 4-character suffix across every worker, or only worker if it
// is not "". With finished, the journals' finished tasks are candidates
// alongside the live ones: an id that names several, live or finished
// alike, is exit 2 listing them (a live match never silently wins); an
// exact live id is taken without reading a journal. None: exit 12.
// Workers whose partition cannot be read are skipped, and their errors
// (naming the worker) returned alongside a result (for the caller to
// report); when no readable worker has the id, the error is the first
// skipped worker's (14 for a corrupt partition), not "not found".
func FindTask(ctx context.Context, h home.Home, worker, prefix string, finished bool) (Found, []error, error) {
	var names []string
	if worker != "" {
		if _, err := config.LoadWorker(h, worker); err != nil {
			return Found{}, nil, err
		}
		names = []string{worker}
	} else {
		var err error
		if names, err = config.ListWorkers(h); err != nil {
			return Found{}, nil, err
		}
	}
	sort.Strings(names)
	var skipped []error
	owner := map[string]string{}
	var ids []string
	parts := map[string]*Partition{}
	for _, n := range names {
		p, err := Open(h, n, Options{Org: &config.Org{}, Worker: &config.Worker{Name: n}})
		if err != nil {
			skipped = append(skipped, fmt.Errorf("worker %s: %w", n, err))
			continue
		}
		parts[n] = p
		f, err := readFile(p.W.TasksFile())
		if err != nil {
			if worker != "" {
				return Found{}, nil, err
			}
			skipped = append(skipped, fmt.Errorf("worker %s: %w", n, err))
			continue
		}
		for i := range f.Tasks {
			if f.Tasks[i].ID == prefix {
				return Found{Worker: n, ID: prefix}, skipped, nil
			}
			owner[f.Tasks[i].ID] = n
			ids = append(ids, f.Tasks[i].ID)
		}
	}
	if finished {
		for _, n := range names {
			if parts[n] == nil {
				continue
			}
			hist, ferr := parts[n].history()
			if ferr != nil {
				if worker != "" {
					return Found{}, nil, ferr
				}
				skipped = append(skipped, fmt.Errorf("worker %s: %w", n, ferr))
				continue
			}
			for _, fid := range hist.finishedIDs() {
				if _, live := owner[fid]; !live {
					owner[fid] = n
					ids = append(ids, fid)
				}
			}
		}
	}
	id, err := home.Resolve("task", prefix, ids)
	if err != nil {
		if errors.Is(err, errs.ErrNotFound) && worker != "" {
			return Found{}, skipped, errs.New(errs.ErrNotFound, fmt.Sprintf("task %q: not found in worker %s", prefix, worker))
		}
		return Found{}, skipped, unreadableOr(prefix, skipped, err)
	}
	return Found{Worker: owner[id], ID: id}, skipped, nil
}

// unreadableOr turns "not found" into the first unreadable worker's error
// (its kind: 14 for a corrupt partition) when a worker was skipped, since
// the id could live there; the caller need not report skipped[0] again.
func unreadableOr(prefix string, skipped []error, err error) error {
	if !errors.Is(err, errs.ErrNotFound) || len(skipped) == 0 {
		return err
	}
	return fmt.Errorf("task %q: not found in the workers that could be read; %w", prefix, skipped[0])
}
