package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// The usage index (data/workers/W/usage/YYYY-MM-DD.json) keeps one row per
// ended run, in one file per UTC day of the run ids, so that a change of
// the host's zone never invalidates it and a query reads only the days it
// asks for. It is a cache of the run records, never trusted blindly: every
// row of a run whose folder is still there is checked against its
// run.json's inode, size and modification time and recomputed when they
// differ; a run without a row is read and added; a file that cannot be
// read is set aside (DAY.json.bad-UNIX) and rebuilt from the run records.
// Rows of runs pruned since are kept: the index is how usage outlives the
// run folders. Updates hold usage/.lock; without it (busy for 5 s, or a
// data tree this process cannot write) the answer is computed all the
// same and nothing is saved.

const usageLockWait = 5 * time.Second

// ErrUsageNotSaved is wrapped by a WorkerUsage problem saying the index
// could not be updated (its lock busy, or not writable).
var ErrUsageNotSaved = errors.New("usage index not saved")

// maxUsageDay bounds one index file: a day of rows is a few hundred KiB
// even for a worker running all day.
const maxUsageDay = 64 << 20

type usageDayFile struct {
	Format int        `json:"format"`
	Day    string     `json:"day"`
	Runs   []RunUsage `json:"runs"`
}

// WorkerUsage returns the usage of w's runs that started at or after since
// (zero: every run the index or the runs folder knows), oldest first,
// updating the index. Problems are what the answer had to leave aside (a
// run.json that cannot be read: that run is left out) or repair (an index
// file rebuilt, an index not saved); the error is for a runs folder that
// cannot be listed.
func WorkerUsage(w home.Worker, since, now time.Time) (rows []RunUsage, problems []error, err error) {
	ids, err := IDs(w)
	if err != nil {
		return nil, nil, err
	}
	sinceDay := ""
	if !since.IsZero() {
		sinceDay = since.UTC().Add(-idMargin).Format("2006-01-02")
	}
	byDay := map[string][]string{}
	for _, id := range ids {
		if d := id[:10]; d >= sinceDay {
			byDay[d] = append(byDay[d], id)
		}
	}
	if ents, err := os.ReadDir(w.Usage()); err == nil {
		for _, e := range ents {
			if d, ok := strings.CutSuffix(e.Name(), ".json"); ok && isDay(d) && d >= sinceDay {
				if _, seen := byDay[d]; !seen {
					byDay[d] = nil
				}
			}
		}
	}
	days := make([]string, 0, len(byDay))
	for d := range byDay {
		days = append(days, d)
	}
	sort.Strings(days)

	var lock *fsx.Lock
	if len(days) > 0 {
		if err := fsx.MkdirDurable(w.Usage(), 0o755); err == nil {
			lock, _ = fsx.LockPath(context.Background(), w.UsageLock(), false, usageLockWait)
		}
		defer lock.Unlock()
	}
	unsaved := 0
	for _, day := range days {
		dayRows, save, probs := usageDay(w, day, byDay[day], lock != nil, now)
		problems = append(problems, probs...)
		if save != nil {
			if lock == nil {
				unsaved++
			} else if err := saveUsageDay(w, day, save); err != nil {
				problems = append(problems, fmt.Errorf("usage index %s not saved: %v: %w", w.UsageDay(day), err, ErrUsageNotSaved))
			}
		}
		for _, u := range dayRows {
			if since.IsZero() || !u.StartedAt.Before(since) {
				rows = append(rows, u)
			}
		}
	}
	if unsaved > 0 {
		problems = append(problems, fmt.Errorf("usage index of %s not updated (%s busy or not writable); the figures were computed from the run records: %w", w.Name, w.UsageLock(), ErrUsageNotSaved))
	}
	// The live runs of the days, not indexed, come last within their day:
	// sort by start.
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID })
	return rows, problems, nil
}

// usageDay brings one day's index up to date with the run folders ids of
// that day: the rows to answer with (live runs included, not saved),
// the file's new rows when it must be written (else nil), and the problems
// met.
func usageDay(w home.Worker, day string, ids []string, canRepair bool, now time.Time) (rows, save []RunUsage, problems []error) {
	changed := false
	path := w.UsageDay(day)
	indexed, err := readUsageDay(path, day)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist):
		indexed = map[string]RunUsage{}
	default:
		indexed = map[string]RunUsage{}
		changed = true
		msg := fmt.Sprintf("usage index %v; rebuilt from the run records", err)
		if canRepair {
			aside := fmt.Sprintf("%s.bad-%d", path, now.Unix())
			if rerr := os.Rename(path, aside); rerr == nil {
				msg += " (the bad file kept as " + aside + ")"
			}
		}
		problems = append(problems, errors.New(msg))
	}
	present := map[string]bool{}
	for _, id := range ids {
		present[id] = true
		dir := w.Run(id)
		key, err := statKey(home.RunJSON(dir))
		if errors.Is(err, fs.ErrNotExist) {
			continue // no record yet: a run starting
		}
		if err == nil {
			if row, ok := indexed[id]; ok && row.Stat != nil && *row.Stat == key {
				rows = append(rows, row)
				continue
			}
		}
		r, err := ReadRecord(dir)
		if err != nil {
			problems = append(problems, fmt.Errorf("run %s of %s left out of usage: %w", id, w.Name, err))
			continue
		}
		u, err := UsageOf(dir, r, now)
		if err != nil {
			problems = append(problems, fmt.Errorf("run %s of %s: model split incomplete: %w", id, w.Name, err))
		}
		rows = append(rows, u)
		if u.Live {
			if _, ok := indexed[id]; ok {
				delete(indexed, id)
				changed = true
			}
			continue
		}
		u.Stat = &key
		rows[len(rows)-1] = u
		indexed[id] = u
		changed = true
	}
	for id, row := range indexed {
		if !present[id] {
			rows = append(rows, row) // a pruned run: the index remembers it
		}
	}
	if changed {
		save = make([]RunUsage, 0, len(indexed))
		for _, row := range indexed {
			save = append(save, row)
		}
		sort.Slice(save, func(i, j int) bool { return save[i].ID < save[j].ID })
	}
	return rows, save, problems
}

// readUsageDay reads one index file, refusing anything this build did not
// write: another format, another day, a row that is not a run of that day,
// a duplicate, a negative figure.
func readUsageDay(path, day string) (map[string]RunUsage, error) {
	f, err := fsx.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	bad := func(why string) error { return fmt.Errorf("%s: %s: %w", path, why, errs.ErrRefused) }
	data, err := io.ReadAll(io.LimitReader(f, maxUsageDay+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxUsageDay {
		return nil, bad(fmt.Sprintf("larger than %d bytes", maxUsageDay))
	}
	var d usageDayFile
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, bad(err.Error())
	}
	if d.Format != 1 {
		return nil, bad(fmt.Sprintf("unknown format %d", d.Format))
	}
	if d.Day != day {
		return nil, bad(fmt.Sprintf("holds day %q", d.Day))
	}
	out := make(map[string]RunUsage, len(d.Runs))
	for _, u := range d.Runs {
		switch {
		case !home.IsRunID(u.ID) || u.ID[:10] != day:
			return nil, bad(fmt.Sprintf("row %q is not a run of %s", u.ID, day))
		case u.Stat == nil:
			return nil, bad(fmt.Sprintf("row %s has no stat", u.ID))
		case !validUse(u.ModelUse) || u.WallSeconds < 0 || u.CPUSeconds < 0:
			return nil, bad(fmt.Sprintf("row %s has a negative figure", u.ID))
		}
		if _, dup := out[u.ID]; dup {
			return nil, bad(fmt.Sprintf("row %s twice", u.ID))
		}
		for name, m := range u.Models {
			if m == nil || !validUse(*m) || name == "" {
				return nil, bad(fmt.Sprintf("row %s has a bad model entry", u.ID))
			}
		}
		out[u.ID] = u
	}
	return out, nil
}

func validUse(m ModelUse) bool {
	return m.Calls >= 0 && m.InputTokens >= 0 && m.OutputTokens >= 0 && m.CacheReadTokens >= 0 &&
		m.CacheWriteTokens >= 0 && m.Unpriced >= 0 && (m.USD == nil || *m.USD >= 0)
}

func saveUsageDay(w home.Worker, day string, rows []RunUsage) error {
	data, err := json.Marshal(usageDayFile{Format: 1, Day: day, Runs: rows})
	if err != nil {
		return err
	}
	return fsx.WriteFile(w.UsageDay(day), append(data, '\n'), 0o644)
}

func statKey(path string) (fileKey, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return fileKey{}, err
	}
	k := fileKey{Size: fi.Size(), MTime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		k.Ino = st.Ino
	}
	return k, nil
}

// isDay reports whether s is YYYY-MM-DD.
func isDay(s string) bool {
	_, err := time.Parse("2006-01-02", s)
	return err == nil && len(s) == 10
}
