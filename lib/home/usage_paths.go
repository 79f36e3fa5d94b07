package home

import "path/filepath"

// Usage is the worker's usage index (data/workers/W/usage/): one file per
// UTC day of run ids, rebuildable from the run records at any time.
func (w Worker) Usage() string { return filepath.Join(w.Dir, "usage") }

// UsageDay is the index file of the runs whose ids start with day
// (YYYY-MM-DD, UTC).
func (w Worker) UsageDay(day string) string { return filepath.Join(w.Dir, "usage", day+".json") }

// UsageLock guards updates of the usage index.
func (w Worker) UsageLock() string { return filepath.Join(w.Dir, "usage", ".lock") }
