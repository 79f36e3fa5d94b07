package runs

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// Entry is one run folder found in the data tree.
type Entry struct {
	Worker string
	ID     string
	Dir    string
	Record *Record // nil while the supervisor has not written run.json yet, or when Err is set
	Err    error   // run.json unreadable (corrupt or unknown format: errs.ErrRefused)
}

// Live reports whether the run's supervisor is running now.
func (e Entry) Live() bool {
	b, err := ReadBoxInfo(e.Dir)
	return err == nil && b.Alive()
}

// Started is when the run started: its record's started_at, else the time
// in its id.
func (e Entry) Started() time.Time {
	if e.Record != nil && !e.Record.StartedAt.IsZero() {
		return e.Record.StartedAt
	}
	t, _ := home.RunTime(e.ID)
	return t
}

// Filter narrows List.
type Filter struct {
	Workers []string  // only these workers (nil: all)
	Task    string    // only runs of this task (exact id or a prefix, with or without "t-")
	Since   time.Time // only runs started at or after this
	Limit   int       // at most this many (0: all), newest first
	// Attested: only runs attested so (completed, failed, needs-review,
	// canceled; "none" for a run with no attestation: ad hoc or live).
	Attested string
	// Template: only runs of tasks this template fired (their id ends
	// "-WORKER.TEMPLATE", home.FiredTaskID).
	Template string
	// Pushed: only runs that pushed something that landed or waits in a
	// gate (run.json git.pushes with outcome pushed or gated), to the repo
	// named, or any repo when it is "*".
	Pushed string
}

// DataWorkers returns the names of the workers that have a folder in the
// data tree (a worker's runs outlive its spec until it is purged), sorted.
func DataWorkers(h home.Home) ([]string, error) {
	ents, err := os.ReadDir(h.DataWorkers())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() && home.ValidWorker(e.Name()) == nil {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// IDs returns the run ids of worker w, oldest first. Folders whose name is
// not a run id (a prune's trash, anything else) are not runs. With
// CacheIDs on, a listing is kept by the folder's identity and read again
// only when that changed: a stat instead of a listing of every run.
func IDs(w home.Worker) ([]string, error) {
	dir := w.Runs()
	if !cacheIDs.Load() {
		return listIDs(w)
	}
	id, ok := fsx.StatID(dir) // before the listing: a change during it shows next time
	if ok {
		if e, found := idsCache.Load(dir); found && e.(*idsEnt).id.Same(id) {
			return slices.Clone(e.(*idsEnt).ids), nil
		}
	}
	ids, err := listIDs(w)
	if err == nil && ok {
		idsCache.Store(dir, &idsEnt{id: id, ids: slices.Clone(ids)})
	}
	return ids, err
}

// CacheIDs turns IDs' listing cache on (or off): for a long-lived reader
// that lists the same workers' runs again and again (roster-web's
// overview); a one-shot command has nothing to gain from it.
func CacheIDs(on bool) {
	cacheIDs.Store(on)
	if !on {
		idsCache.Clear()
	}
}

var (
	cacheIDs atomic.Bool
	idsCache sync.Map     // runs folder -> *idsEnt
	listings atomic.Int64 // runs folders listed (the cache's test reads it)
)

type idsEnt struct {
	id  fsx.FileID
	ids []string
}

func listIDs(w home.Worker) ([]string, error) {
	listings.Add(1)
	ents, err := os.ReadDir(w.Runs())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list runs of %s: %w", w.Name, err)
	}
	var ids []string
	for _, e := range ents {
		if e.IsDir() && home.IsRunID(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// Load reads one run's folder into an Entry; an unreadable run.json is
// kept in Err, a missing one leaves Record nil.
func Load(w home.Worker, id string) Entry {
	e := Entry{Worker: w.Name, ID: id, Dir: w.Run(id)}
	r, err := ReadRecord(e.Dir)
	switch {
	case err == nil:
		e.Record = r
	case errors.Is(err, os.ErrNotExist):
	case errors.Is(err, errs.ErrRefused):
		e.Err = err
	default:
		e.Err = fmt.Errorf("%s: %w", home.RunJSON(e.Dir), errors.Join(err, errs.ErrRefused))
	}
	return e
}

// List returns the runs of h that pass f, newest first (run ids sort in
// start order).
func List(h home.Home, f Filter) ([]Entry, error) {
	workers := f.Workers
	if workers == nil {
		var err error
		if workers, err = DataWorkers(h); err != nil {
			return nil, err
		}
	}
	type ref struct{ worker, id string }
	var all []ref
	for _, w := range workers {
		ids, err := IDs(h.Worker(w))
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			all = append(all, ref{w, id})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].id != all[j].id {
			return all[i].id > all[j].id
		}
		return all[i].worker < all[j].worker
	})
	var out []Entry
	for _, r := range all {
		if !f.Since.IsZero() {
			// The id's time is the start to the second; skip cheaply before reading.
			if t, err := home.RunTime(r.id); err == nil && t.Before(f.Since.Truncate(time.Second)) {
				continue
			}
		}
		e := Load(h.Worker(r.worker), r.id)
		if f.Task != "" && !taskMatches(e, f.Task) {
			continue
		}
		if f.Attested != "" && attestedOf(e) != f.Attested {
			continue
		}
		if f.Template != "" && (e.Record == nil || !strings.HasSuffix(e.Record.Task, "-"+e.Worker+"."+f.Template)) {
			continue
		}
		if f.Pushed != "" && !pushed(e, f.Pushed) {
			continue
		}
		if !f.Since.IsZero() && e.Started().Before(f.Since) {
			continue
		}
		out = append(out, e)
		if f.Limit > 0 && len(out) == f.Limit {
			break
		}
	}
	return out, nil
}

// pushed tells whether e's run landed (or gated) a push to repo ("*": any).
func pushed(e Entry, repo string) bool {
	if e.Record == nil || e.Record.Git == nil {
		return false
	}
	for _, p := range e.Record.Git.Pushes {
		if (p.Outcome == "pushed" || p.Outcome == "gated") && (repo == "*" || p.Repo == repo) {
			return true
		}
	}
	return false
}

// attestedOf is a run's attestation for Filter.Attested ("none": none yet,
// or an ad-hoc run's).
func attestedOf(e Entry) string {
	if e.Record == nil || e.Record.Attested == "" {
		return "none"
	}
	return e.Record.Attested
}

func taskMatches(e Entry, want string) bool {
	if e.Record == nil {
		if b, err := ReadBoxInfo(e.Dir); err == nil {
			return matchTask(b.Task, want)
		}
		return false
	}
	return matchTask(e.Record.Task, want)
}

func matchTask(id, want string) bool {
	return id != "" && (strings.HasPrefix(id, want) || strings.HasPrefix(id, "t-"+want))
}

// Resolve finds the run a unique prefix names, across all workers. Several
// matches are exit 2 with the candidates, none exit 12.
func Resolve(h home.Home, prefix string) (Entry, error) {
	workers, err := DataWorkers(h)
	if err != nil {
		return Entry{}, err
	}
	owner := map[string]string{}
	var ids []string
	for _, w := range workers {
		wids, err := IDs(h.Worker(w))
		if err != nil {
			return Entry{}, err
		}
		for _, id := range wids {
			if prev, ok := owner[id]; ok && prev != w {
				// The same id under two workers cannot be named by id alone.
				ids = append(ids, w+"/"+id)
				continue
			}
			owner[id] = w
			ids = append(ids, id)
		}
	}
	id, err := home.Resolve("run", prefix, ids)
	if err != nil {
		return Entry{}, err
	}
	if w, rid, ok := strings.Cut(id, "/"); ok {
		return Load(h.Worker(w), rid), nil
	}
	return Load(h.Worker(owner[id]), id), nil
}

// Lookup is Resolve that also refuses a run whose run.json is unreadable
// (exit 14). A run without run.json yet is returned with Record nil.
func Lookup(h home.Home, prefix string) (Entry, error) {
	e, err := Resolve(h, prefix)
	if err != nil {
		return e, err
	}
	return e, e.Err
}
