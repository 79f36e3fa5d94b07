package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// PruneOptions says which run folders Prune deletes. Per worker, the
// newest Keep runs stay (Keep < 0: no count bound); with OlderThan > 0
// only runs that started more than OlderThan before Now go. Whatever the
// options, a live run and a run a task in tasks.json still refers to
// (claim.run of a pending, claimed or needs-review task) are never deleted.
type PruneOptions struct {
	Workers   []string // nil: every worker in the data tree
	Keep      int
	OlderThan time.Duration
	DryRun    bool
	Now       time.Time
}

// Pruned is one run folder Prune deleted (or would delete, in a dry run).
type Pruned struct {
	Worker string
	ID     string
}

// PruneError is a worker Prune skipped, and why; the others carry on.
type PruneError struct {
	Worker string
	Err    error
}

func (e *PruneError) Error() string { return fmt.Sprintf("worker %s: %v", e.Worker, e.Err) }
func (e *PruneError) Unwrap() error { return e.Err }

// trashPrefix names a run folder on its way out: renamed first (one atomic
// step that takes it out of every listing), then removed. A crash between
// leaves a trash folder the next prune removes.
const trashPrefix = ".trash-"

// Prune deletes old run folders per o. It returns what it pruned and the
// workers it had to skip (e.g. an unreadable tasks.json: without it, it
// cannot know which runs are still referred to).
func Prune(h home.Home, o PruneOptions) ([]Pruned, []error) {
	workers := o.Workers
	if workers == nil {
		var err error
		if workers, err = DataWorkers(h); err != nil {
			return nil, []error{err}
		}
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	var out []Pruned
	var problems []error
	for _, name := range workers {
		p, err := pruneWorker(h.Worker(name), o)
		out = append(out, p...)
		if err != nil {
			problems = append(problems, &PruneError{Worker: name, Err: err})
		}
	}
	return out, problems
}

func pruneWorker(w home.Worker, o PruneOptions) ([]Pruned, error) {
	pruned, unreadable, err := pruneWorkerRuns(w, o)
	if err == nil && len(unreadable) > 0 {
		err = errs.WithHint(fmt.Errorf("kept %d run folder(s) whose run.json cannot be read (%s): %w",
			len(unreadable), strings.Join(unreadable, ", "), errs.ErrRefused),
			"look at them with `roster-runs show RUN`; delete a folder by hand once it is understood")
	}
	return pruned, err
}

// pruneWorkerRuns prunes one worker; runs whose record cannot be read are
// kept (unreadable data is refused, never deleted on a guess) and named.
func pruneWorkerRuns(w home.Worker, o PruneOptions) ([]Pruned, []string, error) {
	var unreadable []string
	if !o.DryRun {
		removeTrash(w)
	}
	refs, err := ClaimedRuns(w)
	if err != nil {
		return nil, nil, err
	}
	ids, err := IDs(w)
	if err != nil {
		return nil, nil, err
	}
	var out []Pruned
	kept := 0
	indexed := false
	for i := len(ids) - 1; i >= 0; i-- { // newest first
		id := ids[i]
		if o.Keep >= 0 && kept < o.Keep {
			kept++
			continue
		}
		if o.OlderThan > 0 {
			if t, err := home.RunTime(id); err != nil || o.Now.Sub(t) <= o.OlderThan {
				continue
			}
		}
		if refs[id] {
			continue
		}
		dir := w.Run(id)
		if b, err := ReadBoxInfo(dir); err == nil && b.Alive() {
			continue
		}
		if e := Load(w, id); e.Err != nil {
			unreadable = append(unreadable, id)
			continue
		}
		if !o.DryRun && !indexed {
			// The usage index keeps what the runs used after their folders
			// go: bring it up to date first, or delete nothing.
			_, problems, err := WorkerUsage(w, time.Time{}, o.Now)
			for _, p := range problems {
				if errors.Is(p, ErrUsageNotSaved) {
					err = p
				}
			}
			if err != nil {
				return out, unreadable, fmt.Errorf("runs kept: %w: %w", err, errs.ErrBusy)
			}
			indexed = true
		}
		if !o.DryRun {
			if err := removeRun(w, id); err != nil {
				return out, unreadable, err
			}
		}
		out = append(out, Pruned{Worker: w.Name, ID: id})
	}
	return out, unreadable, nil
}

func removeRun(w home.Worker, id string) error {
	trash := filepath.Join(w.Runs(), trashPrefix+id)
	if err := os.Rename(w.Run(id), trash); err != nil {
		return fmt.Errorf("prune run %s: %w", id, err)
	}
	if err := fsx.SyncDir(w.Runs()); err != nil {
		return err
	}
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("prune run %s: %w", id, err)
	}
	return nil
}

func removeTrash(w home.Worker) {
	ents, _ := os.ReadDir(w.Runs())
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), trashPrefix) {
			os.RemoveAll(filepath.Join(w.Runs(), e.Name()))
		}
	}
}

// tasksFile is the little of tasks.json prune needs: which runs the tasks
// still in the partition refer to.
type tasksFile struct {
	Format int `json:"format"`
	Tasks  []struct {
		ID    string `json:"id"`
		State string `json:"state"`
		Claim *struct {
			Run string `json:"run"`
		} `json:"claim"`
	} `json:"tasks"`
}

// ClaimedRuns returns the run ids that tasks in w's tasks.json refer to.
// A missing tasks.json refers to none; an unreadable one is refused (exit 14).
func ClaimedRuns(w home.Worker) (map[string]bool, error) {
	data, err := os.ReadFile(w.TasksFile())
	if errors.Is(err, os.ErrNotExist) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, errs.New(errs.ErrRefused, fmt.Sprintf("%s: cannot read: %v", w.TasksFile(), err))
	}
	var f tasksFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, errs.New(errs.ErrRefused, fmt.Sprintf("%s: %v", w.TasksFile(), err))
	}
	if f.Format != 1 {
		return nil, errs.New(errs.ErrRefused, fmt.Sprintf("%s: unknown format %d", w.TasksFile(), f.Format))
	}
	refs := map[string]bool{}
	for _, t := range f.Tasks {
		if t.Claim != nil && t.Claim.Run != "" {
			refs[t.Claim.Run] = true
		}
	}
	return refs, nil
}
