package box

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// RunIDFutureSlack is how far in the future a run id's time may be (clocks
// of two hosts, or a step of the clock): ids sort in start order, so a run
// named for a later time would sort after runs that start after it.
const RunIDFutureSlack = 5 * time.Minute

// CheckRunID refuses (exit 2) a run id not of the form
// YYYY-MM-DD-HH-MM-SS-xxxx or whose time is more than RunIDFutureSlack
// after now.
func CheckRunID(id string, now time.Time) error {
	if !home.IsRunID(id) {
		return errs.New(errs.ErrUsage, fmt.Sprintf("run id %q: not of the form YYYY-MM-DD-HH-MM-SS-xxxx", id))
	}
	t, err := time.Parse("2006-01-02-15-04-05", id[:19])
	if err != nil {
		return errs.New(errs.ErrUsage, fmt.Sprintf("run id %q: %v", id, err))
	}
	if t.After(now.Add(RunIDFutureSlack)) {
		return errs.New(errs.ErrUsage, fmt.Sprintf("run id %q: its time is more than %s in the future (ids sort in start order)", id, RunIDFutureSlack))
	}
	return nil
}

// CreateRunDir makes the folder of a new run, exclusively: a run id that
// names an existing run is refused (exit 13) and nothing in it is
// touched. The one existing folder accepted as new is the dispatcher's own
// start (fromDispatcher: a real folder holding nothing but supervisor.log,
// the supervisor's stdio); outbox/ is then made exclusively, so of two
// supervisors given the same id only one goes on. The new folder is made
// durable (its entry in runs/ synced) by Supervise, with box.json and off
// the start's critical path, before the box starts.
func CreateRunDir(dir string, fromDispatcher bool) error {
	exists := errs.WithHint(errs.New(errs.ErrConflict, fmt.Sprintf("run %s already exists", filepath.Base(dir))),
		"a run id names one run: give a new one (the dispatcher makes them), or omit --task and --run for an ad-hoc run")
	err := os.Mkdir(dir, 0o755)
	switch {
	case err == nil:
		if err := os.Chmod(dir, 0o755); err != nil { // umask undone
			return err
		}
	case !errors.Is(err, os.ErrExist):
		return fmt.Errorf("run folder: %w", err)
	case !fromDispatcher:
		return exists
	default:
		st, err := os.Lstat(dir)
		if err != nil || !st.IsDir() {
			return exists
		}
		names, err := readNames(dir)
		if err != nil {
			return fmt.Errorf("run folder: %w", err)
		}
		for _, n := range names {
			if n != filepath.Base(home.SupervisorLog(dir)) {
				return exists
			}
		}
	}
	if err := os.Mkdir(home.Outbox(dir), 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			return exists
		}
		return fmt.Errorf("run folder: %w", err)
	}
	return nil
}

func readNames(dir string) ([]string, error) {
	f, err := fsx.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}
