package dispatch

import (
	"sync/atomic"
	"syscall"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/home"
)

// What the dispatcher reads is cached by file identity, so that its work
// follows what changed, not how many workers exist (docs/dispatch-and-box.md,
// "At scale"): a worker's spec is parsed again only when its file's
// identity (device, inode, size, mtime, ctime) changed; org.toml and the
// workers/ listing likewise. A file changed within racyWindow of when its
// identity was taken is not trusted at the next look (a change in the same
// timestamp tick would keep every field): it is read again.

// racyWindow: an identity taken this soon after the file's ctime is
// re-checked by reading.
const racyWindow = time.Second

// fileID is what identifies one version of a file.
type fileID struct {
	dev, ino, size uint64
	mtime, ctime   int64
	racy           bool // its ctime was within racyWindow of the stat
}

// statID is path's identity; ok is false when it cannot be stat'd.
func statID(path string) (fileID, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return fileID{}, false
	}
	ctime := st.Ctim.Nano()
	return fileID{dev: st.Dev, ino: st.Ino, size: uint64(st.Size), mtime: st.Mtim.Nano(), ctime: ctime,
		racy: time.Now().UnixNano()-ctime < int64(racyWindow)}, true
}

// same tells whether a and b are the same trusted version.
func (a fileID) same(b fileID) bool {
	return !a.racy && a.dev == b.dev && a.ino == b.ino && a.size == b.size && a.mtime == b.mtime && a.ctime == b.ctime
}

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
	id  fileID
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
func (d *Dispatcher) readSpec(w string, id fileID, ok bool) *specEnt {
	d.counts.spec.Add(1)
	e := &specEnt{id: id}
	if !ok {
		e.id = fileID{racy: true}
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
	id, ok := statID(d.h.SpecFile(w))
	d.counts.ident.Add(1)
	e := c.ents[w]
	if e == nil || !ok || !e.id.same(id) {
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
			id, ok := statID(d.h.SpecFile(n))
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
	id, ok := statID(d.h.WorkersDir())
	d.counts.ident.Add(1)
	if ok && d.listed != nil && d.listedID.same(id) {
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
		d.listedID = fileID{racy: true}
	}
	return names, nil
}

// tasksID is the identity of a worker's tasks.json: the zero fileID when
// it is missing (a partition never changed), which is the same as itself.
func tasksID(w home.Worker) fileID {
	id, _ := statID(w.TasksFile())
	return id
}
