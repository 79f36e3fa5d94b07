package dispatch

import (
	"sync/atomic"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// What the dispatcher reads is cached by file identity (fsx.FileID), so
// that its work follows what changed, not how many workers exist
// (docs/dispatch-and-box.md, "At scale"): a worker's spec is parsed again
// only when its file's identity changed; org.toml and the workers/
// listing likewise.

// Counts is the work the dispatcher has done reading the home: what the
// scale test reads (a tick must do work in proportion to what changed).
type Counts struct {
	SpecReads      int64 // worker specs read and parsed
	OrgReads       int64 // org.toml read and parsed
	Listings       int64 // workers/ listed
	Evaluations    int64 // workers evaluated (partition read, templates fired, due computed)
	ReclaimReads   int64 // partitions read by the reclaim pass
	IdentityChecks int64 // stats of a cached file's identity
	Visits         int64 // workers a tick looked at (a verifying pass: every one; else only those changed or due)
}

type counters struct {
	spec, org, list, eval, reclaim, ident, visit atomic.Int64
}

// Counts returns the work done so far.
func (d *Dispatcher) Counts() Counts {
	c := &d.counts
	return Counts{SpecReads: c.spec.Load(), OrgReads: c.org.Load(), Listings: c.list.Load(),
		Evaluations: c.eval.Load(), ReclaimReads: c.reclaim.Load(), IdentityChecks: c.ident.Load(), Visits: c.visit.Load()}
}

// specEnt is one worker's spec as last read.
type specEnt struct {
	id  fsx.FileID
	w   *config.Worker
	err error
	uid int // the uid it names (read leniently when it does not parse)
	has bool
}

// specCache holds every worker spec the dispatcher has read, and their
// uids, so that the check that no two workers share a uid costs nothing
// per load (config.LoadWorker reads every other spec for it).
type specCache struct {
	ents map[string]*specEnt
	uids map[int][]string // sorted names per uid; nil: rebuild
}

// readSpec reads worker w's spec into a new entry, its identity taken
// before the read (a change after it differs at the next look).
func (d *Dispatcher) readSpec(w string, id fsx.FileID, ok bool) *specEnt {
	d.counts.spec.Add(1)
	e := &specEnt{id: id}
	if !ok {
		e.id = fsx.Untrusted
	}
	e.w, e.uid, e.has, e.err = config.ReadWorkerUID(d.h, w)
	return e
}

// spec returns worker w's spec, reading it again only if its file changed.
func (d *Dispatcher) spec(w string) (*config.Worker, error) {
	c := &d.specs
	if c.ents == nil {
		c.ents = map[string]*specEnt{}
	}
	id, ok := fsx.StatID(d.h.SpecFile(w))
	d.counts.ident.Add(1)
	e := c.ents[w]
	if e == nil || !ok || !e.id.Same(id) {
		ne := d.readSpec(w, id, ok)
		if e == nil || e.uid != ne.uid || e.has != ne.has {
			c.uids = nil
		}
		c.ents[w], e = ne, ne
	}
	if e.err != nil {
		return nil, e.err
	}
	if other := config.OtherWithUID(d.uidIndex()[e.uid], w); other != "" {
		return nil, config.SharedUID(d.h, w, e.uid, other)
	}
	return e.w, nil
}

// uidIndex maps each uid to the workers whose specs name it. A worker not
// read yet is read here (the first tick reads them all anyway).
func (d *Dispatcher) uidIndex() map[int][]string {
	c := &d.specs
	if c.uids != nil {
		return c.uids
	}
	names, _ := d.listWorkers()
	idx := map[int][]string{}
	for _, n := range names { // sorted: the first other is the one LoadWorker names
		e := c.ents[n]
		if e == nil {
			id, ok := fsx.StatID(d.h.SpecFile(n))
			e = d.readSpec(n, id, ok)
			c.ents[n] = e
		}
		if e.has {
			idx[e.uid] = append(idx[e.uid], n)
		}
	}
	c.uids = idx
	return idx
}

// forgetSpecs drops the cached specs of workers no longer listed.
func (d *Dispatcher) forgetSpecs(listed map[string]bool) {
	for n := range d.specs.ents {
		if !listed[n] {
			delete(d.specs.ents, n)
			d.specs.uids = nil
		}
	}
}

// listWorkers is config.ListWorkers, listed again only when the workers/
// folder changed.
func (d *Dispatcher) listWorkers() ([]string, error) {
	id, ok := fsx.StatID(d.h.WorkersDir())
	d.counts.ident.Add(1)
	if ok && d.listed != nil && d.listedID.Same(id) {
		return d.listed, nil
	}
	d.counts.list.Add(1)
	names, err := config.ListWorkers(d.h)
	if err != nil {
		d.listed = nil
		return nil, err
	}
	if names == nil {
		names = []string{}
	}
	d.listed, d.listedID = names, id
	d.listGen++
	if !ok {
		d.listedID = fsx.Untrusted
	}
	return names, nil
}

// tasksID is the identity of a worker's tasks.json: the zero fsx.FileID when
// it is missing (a partition never changed), which is the same as itself.
func tasksID(w home.Worker) fsx.FileID {
	id, _ := fsx.StatID(w.TasksFile())
	return id
}
