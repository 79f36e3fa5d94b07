package dispatch

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/tms"
)

// ReclaimEvery is how often the loop looks for claimed tasks whose box died.
const ReclaimEvery = 30 * time.Second

// Options configure a Dispatcher. Zero values take the org's settings.
type Options struct {
	Home       home.Home
	Clock      tms.Clock           // time rules; nil: the system clock
	Cap        int                 // boxes at once, all workers; 0: org [dispatch] cap
	ChatCap    int                 // relays and live sessions at once, beside Cap; 0: org [dispatch] chat_cap
	Poll       time.Duration       // longest sleep; 0: org [dispatch] poll
	Workers    []string            // only these workers; nil: all
	Once       bool                // one tick (and the start-up reclaim), then return
	UntilIdle  bool                // return when nothing is claimable, no box is live and every process started has exited
	NoWatch    bool                // no fsnotify: wake only on timers and poll
	Log        *slog.Logger        // nil: discard
	Getenv     func(string) string // the environment, fixed at start (env: credentials); nil: os.Environ now
	BoxProgram string              // roster-box; "": found with suite.Find
	// Programs run by the daily jobs; "": found with suite.Find.
	SnapProgram, RunsProgram string
}

// Dispatcher is one home's dispatch loop.
type Dispatcher struct {
	o      Options
	h      home.Home
	clock  tms.Clock
	log    *slog.Logger
	getenv func(string) string

	org       *config.Org
	bad       map[string]string // worker (or "org.toml") -> the error logged once
	busy      map[string]bool   // workers skipped for a held partition lock (logged once)
	held      string            // the hold logged as started, "" when none
	credHeld  map[string]string // worker -> its credential hold logged as started (credhold.go)
	specWarn  map[string]string // worker -> its spec's warnings as last logged (logSpecWarnings)
	rr        int               // round-robin start
	kick      chan struct{}     // a child exited, a job finished: look again
	children  sync.Map          // run id -> worker while our `roster-box run` child lives
	dailyBusy sync.WaitGroup    // daily jobs and take retries (taketry.go) under way
	retrying  atomic.Bool       // a take retry is under way
	hooks     sync.WaitGroup    // [notify] on_failure hooks this dispatcher started
	ended     sync.Map          // run id -> true: its end was logged (logRunEnd)
	adopted   sync.Map          // run id -> adoptedRun: a live box of a predecessor, logged as adopted
	dailyMu   sync.Mutex
	dailyRun  bool
	sweep     *sweepRun  // the daily sweep under way, or nil
	stateDay  string     // dispatch.json said the daily jobs ran on this day ...
	stateID   fsx.FileID // ... when it had this identity
	sweepMu   sync.Mutex
	sweeping  map[string]bool // workers of the sweep's batch under way: no claims for them until it ends

	// What the last ticks read, and what changed since (see workerState).
	cache    map[string]*workerState
	queue    dueQueue        // the cached workers' next instants
	withDue  map[string]bool // cached workers with claimable tasks
	live     int             // claimed tasks across the cached workers, relays apart (store keeps it)
	chatLive int             // claimed relays across them: the chat lane
	tickGen  int             // the listing the last tick looked at (listGen)
	dirty    map[string]bool // its partition changed
	respec   map[string]bool // its spec changed: read it whole again
	allDirty bool
	watching bool
	wasHeld  bool
	lastFull time.Time
	lastDay  string
	wsync    bool        // the set of watched folders may have changed
	lost     atomic.Bool // the watcher lost events: read everything again

	// What is cached by file identity (specs.go).
	specs    specCache
	listed   []string // workers/ as last listed
	listGen  int      // incremented at each new listing
	served   map[string]bool
	servedAt int // the listGen served was made for (0: never)
	listedID fsx.FileID
	orgID    fsx.FileID
	orgData  []byte                // org.toml's text as last read
	orgOK    bool                  // org.toml was read at orgID (or was missing: orgGone)
	orgGone  bool                  // org.toml was missing at the last read
	vaultID  fsx.FileID            // the vault folder's identity at the last tick
	force    bool                  // every worker must be evaluated again (not only the changed ones)
	orphans  map[string]fsx.FileID // worker -> its runs/ folder when its last orphan pass found every run ended
	counts   counters
	// unwatched: workers whose folders could not be watched (watch.go):
	// their files are verified at every tick.
	unwatched map[string]bool

	childExited atomic.Bool  // a supervisor we started has exited
	running     atomic.Int64 // supervisors we started that have not exited
}

// New returns a dispatcher for o.Home. It does not take the lock: call
// Lock first and keep it for as long as Run runs.
func New(o Options) *Dispatcher {
	d := &Dispatcher{o: o, h: o.Home, clock: o.Clock, log: o.Log, getenv: o.Getenv,
		bad: map[string]string{}, busy: map[string]bool{}, kick: make(chan struct{}, 1),
		cache: map[string]*workerState{}, withDue: map[string]bool{}, dirty: map[string]bool{}, respec: map[string]bool{}}
	if d.clock == nil {
		d.clock = tms.SystemClock{}
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if d.getenv == nil {
		env := map[string]string{}
		for _, kv := range os.Environ() {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = v
			}
		}
		d.getenv = func(k string) string { return env[k] }
	}
	return d
}

// changed marks what a change notification for path touches: one worker
// (its data folder or its spec), or everything. In a worker's tasks/
// folder only tasks.json counts: every change that alters the partition
// ends by renaming it into place, journal line written first, so that is
// when a look finds the change whole. The journal's appends, the
// temporary files a change writes (several events each), the history
// index and the locks are no change to look at: a worker filing as fast
// as it can must cost the dispatcher one look per change, not one per
// event (a change torn by a crash, its line journaled and tasks.json not
// yet replaced, is rolled forward by the next look under the lock: the
// worker's next change, or the full pass within a minute). It reports
// whether it marked anything: an event that did not is no reason to wake.
func (d *Dispatcher) changed(path string) bool {
	if rel, err := filepath.Rel(d.h.Vault(), path); err == nil && !strings.HasPrefix(rel, "..") {
		return true // a key put or removed: the tick's vault check has held workers looked at
	}
	if rel, err := filepath.Rel(d.h.DataWorkers(), path); err == nil && !strings.HasPrefix(rel, "..") && rel != "." {
		parts := strings.Split(rel, string(filepath.Separator))
		if len(parts) == 3 && parts[1] == "tasks" && parts[2] != "tasks.json" {
			return false
		}
		d.dirty[parts[0]] = true
		return true
	}
	if rel, err := filepath.Rel(d.h.WorkersDir(), path); err == nil && !strings.HasPrefix(rel, "..") && rel != "." {
		if w, ok := strings.CutSuffix(rel, ".toml"); ok && !strings.Contains(w, "/") {
			d.dirty[w] = true
			d.respec[w] = true
			d.wsync = true
			return true
		}
	}
	d.allDirty = true
	d.wsync = true
	return true
}

func (d *Dispatcher) wake() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// logOnce logs a worker's (or org.toml's) problem the first time it is
// seen, and again only after it has cleared and come back.
func (d *Dispatcher) logOnce(key string, err error) {
	msg := err.Error()
	if d.bad[key] == msg {
		return
	}
	if d.bad[key] == "" {
		d.log.Error("skipping until it can be read", "worker", key, "err", msg)
	} else {
		d.log.Error("still skipping", "worker", key, "err", msg)
	}
	d.bad[key] = msg
}

func (d *Dispatcher) clearBad(key string) {
	if _, ok := d.bad[key]; ok {
		delete(d.bad, key)
		d.log.Info("readable again", "worker", key)
	}
}

// loadOrg re-reads org.toml when its identity changed; an unreadable one
// keeps the last good settings (logged once). A new org.toml has every
// worker evaluated again: its settings (caps, budgets, providers) are
// every worker's.
func (d *Dispatcher) loadOrg() *config.Org {
	id, ok := fsx.StatID(d.h.OrgFile())
	d.counts.ident.Add(1)
	if d.org != nil && d.orgOK && ((ok && d.orgID.Same(id)) || (!ok && d.orgGone)) {
		return d.org
	}
	d.counts.org.Add(1)
	data, err := os.ReadFile(d.h.OrgFile())
	var org *config.Org
	if errors.Is(err, fs.ErrNotExist) {
		data, err = nil, nil
	}
	if err == nil {
		org, err = config.ParseOrg(d.h.OrgFile(), data)
	} else {
		org, err = config.LoadOrg(d.h) // its error, worded as everywhere else
	}
	if err != nil {
		d.orgOK = false
		d.logOnce("org.toml", err)
		return d.org
	}
	d.clearBad("org.toml")
	if d.org != nil && !bytes.Equal(data, d.orgData) {
		d.force = true
	}
	d.org, d.orgData, d.orgID, d.orgOK, d.orgGone = org, data, id, true, !ok
	return org
}

func (d *Dispatcher) cap(org *config.Org) int {
	if d.o.Cap > 0 {
		return d.o.Cap
	}
	return org.Dispatch.Cap
}

// chatCap is [dispatch] chat_cap: relay runs and live sessions at once,
// beside cap.
func (d *Dispatcher) chatCap(org *config.Org) int {
	if d.o.ChatCap > 0 {
		return d.o.ChatCap
	}
	return org.Dispatch.ChatCap
}

func (d *Dispatcher) poll() time.Duration {
	if d.o.Poll > 0 {
		return d.o.Poll
	}
	if d.org != nil && d.org.Dispatch.Poll > 0 {
		return d.org.Dispatch.Poll
	}
	return 2 * time.Second
}

// workers lists the workers of the home (all of them, sorted) and says
// which this dispatcher serves.
func (d *Dispatcher) workers() (all []string, served map[string]bool, err error) {
	all, err = d.listWorkers()
	if err != nil {
		return nil, nil, err
	}
	if d.servedAt == d.listGen && d.served != nil {
		return all, d.served, nil // made once per listing, not at every tick
	}
	served = make(map[string]bool, len(all))
	d.served, d.servedAt = served, d.listGen
	if d.o.Workers == nil {
		for _, w := range all {
			served[w] = true
		}
		return all, served, nil
	}
	exists := map[string]bool{}
	for _, w := range all {
		exists[w] = true
	}
	for _, w := range d.o.Workers {
		if exists[w] {
			served[w] = true
			d.clearBad(w)
		} else {
			d.logOnce(w, errors.New("no such worker (no spec in workers/)"))
		}
	}
	return all, served, nil
}

// open loads a worker's spec and opens its partition.
func (d *Dispatcher) open(org *config.Org, w string) (*tms.Partition, *config.Worker, error) {
	spec, err := d.spec(w)
	if err != nil {
		return nil, nil, err
	}
	p, err := tms.Open(d.h, w, tms.Options{Clock: d.clock, Org: org, Worker: spec, Getenv: d.getenv, LockWait: PartitionWait})
	return p, spec, err
}

// logSpecWarnings logs a worker spec's warnings (an rw connection, one its
// uid cannot write, a host network: "warned at load", docs/layout.md) when
// they are first read and again only when they change, not at every tick.
func (d *Dispatcher) logSpecWarnings(w string, warnings []string) {
	key := strings.Join(warnings, "\n")
	if d.specWarn == nil {
		d.specWarn = map[string]string{}
	}
	if last, ok := d.specWarn[w]; ok && last == key {
		return
	}
	d.specWarn[w] = key
	for _, m := range warnings {
		d.log.Warn("worker spec warning", "worker", w, "warning", m)
	}
}

// PartitionWait bounds how long the dispatcher waits for a worker's
// partition lock; a worker whose lock it cannot get in that time is skipped
// for the tick (logged once), so one worker's partition never holds up
// another's claims (Containment).
const PartitionWait = 500 * time.Millisecond

// logBusy logs, once until it clears, that a worker was skipped because
// its partition lock was held past PartitionWait.
func (d *Dispatcher) logBusy(w string, err error) {
	if _, ok := d.busy[w]; ok {
		return
	}
	d.busy[w] = true
	d.log.Warn("partition busy; skipping it this tick", "worker", w, "wait", PartitionWait.String(), "err", err.Error())
}

func (d *Dispatcher) clearBusy(w string) {
	if d.busy[w] {
		delete(d.busy, w)
		d.log.Info("partition free again", "worker", w)
	}
}
