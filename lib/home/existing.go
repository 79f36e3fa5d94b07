package home

import (
	"fmt"
	"os"

	"github.com/roster-sh/roster/lib/errs"
)

// ExistingWorker checks name against the worker rule (exit 2) and that the
// worker has a folder in the data tree (exit 10 with a hint), and returns
// its paths. Commands that name a worker whose data they read call it.
func (h Home) ExistingWorker(name string) (Worker, error) {
	if err := ValidWorker(name); err != nil {
		return Worker{}, err
	}
	w := h.Worker(name)
	if fi, err := os.Stat(w.Dir); err != nil || !fi.IsDir() {
		return w, errs.WithHint(errs.New(errs.ErrNoHome, fmt.Sprintf("worker %q does not exist", name)), h.WorkerHint(name))
	}
	return w, nil
}

// MustExist is exit 10 with a hint unless the worker's folder exists.
func (w Worker) MustExist() error {
	if fi, err := os.Stat(w.Dir); err != nil || !fi.IsDir() {
		return errs.WithHint(errs.New(errs.ErrNoHome, fmt.Sprintf("worker %q does not exist", w.Name)),
			"`roster worker ls` lists the workers; `roster worker add "+w.Name+"` adds one")
	}
	return nil
}
