package dispatch

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/tms"
)

// Start is one claim the dispatcher made and the box it started for it.
type Start struct {
	Worker, Task, Run string
	Err               error // the box could not be started (the claim is reclaimed later)
}

// TickReport is what one tick did and saw.
type TickReport struct {
	Started []Start
	Waiting int       // claimable tasks left unclaimed (cap or concurrency full)
	Live    int       // claimed tasks (live boxes) across all workers after the tick
	Held    string    // why dispatch holds, "" when it does not
	Next    time.Time // the earliest future template activation or scheduled_at
	// Workers held for want of a model credential, and why (credhold.go);
	// their claimable tasks are not counted in Waiting.
	WorkerHolds map[string]string
}

// Idle reports whether nothing is claimable now and no box is live.
func (r *TickReport) Idle() bool { return r.Waiting == 0 && r.Live == 0 && len(r.Started) == 0 }

// workerState is what the dispatcher last read of one worker. With
// change notifications on, a worker is read again only when its folders
// changed, its next activation or scheduled_at came, or on a full pass
// (the day turned, a hold ended, or a minute passed), so an idle home with
// many workers costs next to nothing.
type workerState struct {
	name   string
	p      *tms.Partition
	spec   *config.Worker
	claims bool       // served and not paused: the dispatcher claims for it
	due    []tms.Task // claimable, in claim order (relays apart)
	live   int        // claimed tasks on disk (relays apart)
	// The chat lane (docs/channels.md): relay tasks claimable, and
	// relays claimed, counted against [dispatch] chat_cap, not against
	// cap or the worker's concurrency.
	chatDue  []tms.Task
	chatLive int
	next     time.Time
	// why it is held for want of a model credential (credhold.go): while
	// it is, it is read again at every tick
	credHold string
	// The tasks the look found claimed, and where in the journal it
	// stood (unknown if it was skipped as busy): what settles, for a
	// worker that cannot claim, whether a change needs another look.
	claimed []string
	at      tms.Cursor
	// The identities of its spec and tasks.json when it was read: a
	// verifying pass evaluates it again only if one changed.
	specID, tasksID fsx.FileID
	// broken: it could not be read (logged once): it counts for nothing
	// and is evaluated again when its files change or at next
	// (HoldRecheck), not at every tick.
	broken bool
}

// unreadable is the cached state of worker w, which could not be read.
func (d *Dispatcher) unreadable(w string) *workerState {
	ws := &workerState{name: w, broken: true, next: d.clock.Now().Add(HoldRecheck), tasksID: tasksID(d.h.Worker(w)), specID: fsx.Untrusted}
	if e := d.specs.ents[w]; e != nil {
		ws.specID = e.id
	}
	return ws
}

// canClaim tells whether the dispatcher could claim for the worker as it
// was last read: it claims for it and a box more is within its
// concurrency.
func (ws *workerState) canClaim() bool {
	return ws.claims && ws.live < max(ws.spec.Concurrency, 1)
}

// unchanged tells whether a change to ws's partition left everything the
// dispatcher needs of it as last read, so that it need not be read again.
// That holds for a worker it cannot claim for (paused, not served, or at
// its concurrency) when the journal's lines since the last look claim,
// end and requeue nothing and touch no template: then only the count of
// its claims matters (against the cap), and it is the same. Those lines
// are all that is read (tms.Partition.ClaimsChanged), never tasks.json:
// a worker filing large tasks from its box as fast as the host answers
// costs the dispatcher what it writes, not its whole partition at every
// filing, so it does not hold up another worker's claims (Containment).
// A worker that could claim is always read again: the change may be
// work for it.
func (d *Dispatcher) unchanged(ws *workerState) bool {
	if ws.broken || ws.canClaim() {
		return false
	}
	at, changed := ws.p.ClaimsChanged(ws.at, ws.claimed)
	if changed {
		return false
	}
	ws.at = at
	return true
}

// FullEvery is how often every cached worker's files are checked against
// what was read (their identities: a stat each, no read), whatever the
// change notifications said.
const FullEvery = time.Minute

// HoldRecheck is how often a worker held for its spec, a credential, its
// agent or its store is evaluated again without a change of its own (a
// credential can appear in a file no watch covers: pi's login). A change
// to its spec or partition, or to the vault, has it evaluated at once.
const HoldRecheck = 10 * time.Second

// needFull says whether every worker's files must be verified this tick
// (verify), and whether every worker must be evaluated again whatever its
// files say (force: the day turned, a hold ended, org.toml changed, or a
// notification named something that is no one worker's).
func (d *Dispatcher) needFull(held string) (verify, force bool) {
	day := d.Today()
	force = d.force || d.allDirty || day != d.lastDay || (held == "" && d.wasHeld)
	verify = force || !d.watching || d.lost.Swap(false) || time.Since(d.lastFull) >= FullEvery
	d.wasHeld = held != ""
	if verify {
		d.force, d.allDirty, d.lastFull, d.lastDay = false, false, time.Now(), day
	}
	if force {
		clear(d.dirty)
		clear(d.respec)
	}
	return verify, force
}

// changedOnDisk tells whether ws's spec or tasks.json is not what was read.
func (d *Dispatcher) changedOnDisk(ws *workerState) bool {
	d.counts.ident.Add(2)
	spec, ok := fsx.StatID(d.h.SpecFile(ws.name))
	return !ok || !ws.specID.Same(spec) || !ws.tasksID.Same(tasksID(d.h.Worker(ws.name)))
}

// vaultChanged tells whether the vault folder changed since the last tick
// (a key put or removed): held workers are evaluated again.
func (d *Dispatcher) vaultChanged() bool {
	id, ok := fsx.StatID(d.h.Vault())
	d.counts.ident.Add(1)
	if !ok {
		id = fsx.FileID{}
	}
	changed := !d.vaultID.Same(id) && (d.vaultID != fsx.FileID{} || ok)
	d.vaultID = id
	return changed
}

// evaluate reads one worker: its spec, then (when the dispatcher claims
// for it) fires its due activations and reads its claimable tasks; else
// only counts its live claims, which count against the cap. Problems are
// logged once; ok is false when the worker is skipped.
func (d *Dispatcher) evaluate(ctx context.Context, org *config.Org, w string, served bool) (*workerState, bool) {
	d.counts.eval.Add(1)
	tid := tasksID(d.h.Worker(w)) // before the read: a change after it differs next time
	p, spec, err := d.open(org, w)
	if err != nil {
		if served {
			d.logOnce(w, err)
		}
		return nil, false
	}
	if served {
		d.logSpecWarnings(w, spec.Warnings)
	}
	ws := &workerState{name: w, p: p, spec: spec, tasksID: tid}
	if e := d.specs.ents[w]; e != nil {
		ws.specID = e.id
	}
	if !served || spec.Paused {
		if ids, at, err := p.Claims(ctx); err == nil {
			ws.live, ws.claimed, ws.at = len(ids), ids, at
		} else if prev := d.cache[w]; prev != nil {
			ws.live = prev.live // busy: its claims still count against the cap
		}
		return ws, true
	}
	fired, err := p.FireTemplates(ctx)
	if err == nil {
		for _, id := range fired.Fired {
			d.log.Info("template fired", "worker", w, "task", id)
		}
		for _, e := range fired.Errors {
			d.log.Warn("template not fired", "worker", w, "err", e)
		}
	}
	var due *tms.DueReport
	if err == nil {
		due, err = p.Due(ctx)
	}
	if errors.Is(err, errs.ErrBusy) {
		// Its lock is held past PartitionWait: skip it this tick, keep the
		// claims last counted against the cap, look again within a second.
		d.logBusy(w, err)
		ws.next = d.clock.Now().Add(time.Second)
		if prev := d.cache[w]; prev != nil {
			ws.live = prev.live
		}
		return ws, true
	}
	if err != nil {
		d.logOnce(w, err)
		return nil, false
	}
	// Its look took no lock (tms reads a current tasks.json without one),
	// so a busy partition is cleared by a claim that got the lock, or
	// forgotten when it has nothing to claim.
	if len(due.Claimable) == 0 {
		delete(d.busy, w)
	}
	d.clearBad(w)
	ws.takeDue(due, d.clock.Now())
	return ws, true
}

// takeDue sets what the tick needs of a served worker from its due
// report: its claimable tasks (relays apart, for the chat cap), its live
// claims of each lane, when to look again (the next activation only when
// it cannot claim more; HoldRecheck after now when a hold is on it), and
// the hold itself.
func (ws *workerState) takeDue(due *tms.DueReport, now time.Time) {
	ws.claims, ws.live, ws.next = true, due.LiveClaims, due.Next
	for _, t := range due.Claimable {
		if t.Kind == tms.KindRelay {
			ws.chatDue = append(ws.chatDue, t)
		} else {
			ws.due = append(ws.due, t)
		}
	}
	for i := range due.Entries {
		if e := &due.Entries[i]; e.State == tms.Claimed && e.Kind == tms.KindRelay {
			ws.chatLive++
			ws.live--
		}
	}
	if !ws.canClaim() {
		// At its concurrency a scheduled_at coming is nothing to claim
		// (the claim that ends first has it read again); only a
		// template's activation must be fired on time. So tasks filed
		// each for its own second cannot have it read at every one.
		ws.next = due.NextActivation
	}
	ws.at = due.At
	for i := range due.Entries {
		if due.Entries[i].State == tms.Claimed {
			ws.claimed = append(ws.claimed, due.Entries[i].ID)
		}
	}
	ws.credHold = due.CredentialHold
	if due.SpecHold != "" {
		ws.credHold = due.SpecHold // held the same way: logged once each way, read every tick
	}
	if due.StoreHold != "" {
		ws.credHold = due.StoreHold // so is one over store.max
	}
	if ws.credHold != "" {
		// Held: looked at again on its own changes, the vault's, or this timer.
		if again := now.Add(HoldRecheck); ws.next.IsZero() || again.Before(ws.next) {
			ws.next = again
		}
	}
}

// Tick runs one round: for each served worker (paused and unreadable ones
// skipped), keep the heartbeat in step and fire due activations, read the
// claimable tasks; then, unless a hold is on, claim round-robin across
// workers up to the cap and each worker's concurrency, and start a box per
// claim.
func (d *Dispatcher) Tick(ctx context.Context) *TickReport {
	rep := &TickReport{}
	org := d.loadOrg()
	if org == nil {
		return rep
	}
	all, served, err := d.workers()
	if err != nil {
		d.logOnce("workers/", err)
		return rep
	}
	d.clearBad("workers/")

	held := d.checkHolds(org)
	verify, force := d.needFull(held)
	vault := d.vaultChanged()
	now := d.clock.Now()
	for _, w := range d.candidates(all, verify || force, vault, now) {
		d.counts.visit.Add(1)
		ws := d.cache[w]
		if force || ws == nil || d.respec[w] || (!ws.next.IsZero() && !now.Before(ws.next)) ||
			(vault && ws.credHold != "") || (d.dirty[w] && !d.unchanged(ws)) || ((verify || d.unwatched[w]) && d.changedOnDisk(ws)) {
			var ok bool
			if ws, ok = d.evaluate(ctx, org, w, served[w]); !ok {
				if ctx.Err() != nil {
					return rep
				}
				ws = d.unreadable(w) // logged once; looked at again on a change or the slow timer
			}
			d.store(ws)
		}
		delete(d.dirty, w)
		delete(d.respec, w)
	}
	if len(d.cache) > len(all) || len(d.specs.ents) > len(all) {
		// Workers went away (every listed one is cached by now): forget
		// them. Only then is a set of the listed made, not at every tick.
		listed := make(map[string]bool, len(all))
		for _, w := range all {
			listed[w] = true
		}
		for w := range d.cache {
			if !listed[w] {
				d.forget(w)
			}
		}
		d.forgetSpecs(listed)
	}

	rep.Held = held
	rep.WorkerHolds = d.credHeld
	ready := d.ready()
	if rep.Held == "" && len(ready) > 0 {
		// The chat lane first: a message never waits behind batch work.
		rep.Started = d.claimChat(ctx, ready, d.chatCap(org)-d.chatLive)
		rep.Started = append(rep.Started, d.claimRoundRobin(ctx, ready, d.cap(org)-d.live)...)
		for _, ws := range ready {
			if len(ws.due) == 0 && len(ws.chatDue) == 0 {
				delete(d.withDue, ws.name)
			}
		}
	}
	if rep.Held == "" {
		for _, ws := range ready {
			rep.Waiting += len(ws.due) + len(ws.chatDue) // left for a later tick: a cap or concurrency full
		}
	}
	rep.Live = d.live + d.chatLive
	rep.Next = d.queue.next()
	return rep
}

// candidates are the workers a tick looks at: every listed one on a
// verifying or forced pass or when the listing changed; else only those a
// notification named, those whose next instant came (the due queue),
// those held when the vault changed, and those that cannot be watched.
// An idle worker is not among them: a tick's work follows what changed,
// not how many workers there are.
func (d *Dispatcher) candidates(all []string, every, vault bool, now time.Time) []string {
	if every || d.listGen != d.tickGen {
		d.tickGen = d.listGen
		return all
	}
	set := map[string]bool{}
	for w := range d.dirty {
		set[w] = true
	}
	for w := range d.respec {
		set[w] = true
	}
	for w := range d.unwatched {
		set[w] = true
	}
	if vault {
		for w := range d.credHeld {
			set[w] = true
		}
	}
	out := d.queue.due(now, nil)
	for _, w := range out {
		delete(set, w)
	}
	for w := range set {
		if d.cache[w] != nil || d.isListed(w) {
			out = append(out, w)
		} else { // named by a notification, but no worker (its spec is gone)
			delete(d.dirty, w)
			delete(d.respec, w)
		}
	}
	sort.Strings(out)
	return out
}

// isListed tells whether w is in the workers/ listing (a notification
// may name a worker whose spec is gone).
func (d *Dispatcher) isListed(w string) bool {
	i := sort.SearchStrings(d.listed, w)
	return i < len(d.listed) && d.listed[i] == w
}

// store caches ws as its worker's state and keeps what the tick reads
// without looking at every worker in step: the live claims across
// workers, the workers with claimable tasks, the due queue, the holds.
func (d *Dispatcher) store(ws *workerState) {
	if old := d.cache[ws.name]; old != nil && !old.broken {
		d.live -= old.live
		d.chatLive -= old.chatLive
	}
	if !ws.broken {
		d.live += ws.live
		d.chatLive += ws.chatLive
	}
	d.cache[ws.name] = ws
	d.queue.set(ws.name, ws.next)
	if ws.claims && !ws.broken && (len(ws.due) > 0 || len(ws.chatDue) > 0) {
		d.withDue[ws.name] = true
	} else {
		delete(d.withDue, ws.name)
	}
	d.noteHold(ws)
}

// forget drops a worker that went away.
func (d *Dispatcher) forget(w string) {
	if old := d.cache[w]; old != nil && !old.broken {
		d.live -= old.live
		d.chatLive -= old.chatLive
	}
	delete(d.cache, w)
	d.queue.set(w, time.Time{})
	delete(d.withDue, w)
	delete(d.credHeld, w)
}

// ready is the workers with claimable tasks, in name order (the
// round-robin's order).
func (d *Dispatcher) ready() []*workerState {
	names := make([]string, 0, len(d.withDue))
	for w := range d.withDue {
		names = append(names, w)
	}
	sort.Strings(names)
	out := make([]*workerState, len(names))
	for i, w := range names {
		out[i] = d.cache[w]
	}
	return out
}

// claimRoundRobin claims one task per worker in turn, starting one worker
// further each tick, until the cap (avail) or every worker's concurrency or
// due list runs out.
func (d *Dispatcher) claimRoundRobin(ctx context.Context, ready []*workerState, avail int) []Start {
	var out []Start
	n := len(ready)
	start := d.rr % n
	d.rr++
	for progress := true; progress && avail > 0; {
		progress = false
		for i := 0; i < n && avail > 0; i++ {
			ws := ready[(start+i)%n]
			if d.beingSwept(ws.name) {
				continue // the daily sweep is snapshotting its store: after it
			}
			for len(ws.due) > 0 && ws.live < max(ws.spec.Concurrency, 1) {
				task := ws.due[0]
				ws.due = ws.due[1:]
				s, ok := d.claimOne(ctx, ws, task, home.NewRunID(d.clock.Now()))
				if !ok {
					if s.Err == errNextTask {
						continue
					}
					break
				}
				ws.live++
				d.live++
				avail--
				progress = true
				out = append(out, s)
				break // one per worker per turn: round-robin
			}
		}
	}
	return out
}

// errNextTask is claimOne's "someone else got there first, or it
// changed": try the worker's next task.
var errNextTask = errors.New("claimed elsewhere or changed")

// claimOne claims task for a run and starts its box; ok is false when
// nothing was claimed (Err errNextTask: the next task may be).
func (d *Dispatcher) claimOne(ctx context.Context, ws *workerState, task tms.Task, run string) (Start, bool) {
	if _, err := ws.p.Claim(ctx, task.ID, run); err != nil {
		switch {
		case errors.Is(err, errs.ErrConflict) || errors.Is(err, errs.ErrNotFound):
			return Start{Err: errNextTask}, false
		case errors.Is(err, errs.ErrBusy):
			d.logBusy(ws.name, err)
		default:
			d.log.Error("claim failed", "worker", ws.name, "task", task.ID, "err", err)
		}
		return Start{Err: err}, false
	}
	d.clearBusy(ws.name)
	s := Start{Worker: ws.name, Task: task.ID, Run: run}
	if s.Err = d.startBox(ws.name, task.ID, run); s.Err != nil {
		d.log.Error("box not started; the claim is reclaimed within a minute", "worker", ws.name, "task", task.ID, "run", run, "err", s.Err)
	} else {
		d.log.Info("claimed", "worker", ws.name, "task", task.ID, "run", run)
	}
	return s, true
}

// checkHolds evaluates the credential and low-disk holds, logging each
// when it starts and when it ends.
func (d *Dispatcher) checkHolds(org *config.Org) string {
	var why []string
	if !tms.CredentialsPresent(org, d.getenv) {
		why = append(why, "no model credential present (org.toml [dispatch] credentials: "+strings.Join(org.Dispatch.Credentials, ", ")+")")
	}
	if low, reason, err := tms.LowDisk(d.h, org); err == nil && low {
		why = append(why, reason)
	}
	held := strings.Join(why, "; ")
	switch {
	case held == d.held:
	case held == "":
		d.log.Info("dispatch hold ended", "was", d.held)
	case d.held == "":
		d.log.Warn("dispatch held: claiming nothing", "why", held)
	default:
		d.log.Warn("dispatch still held, for another reason", "why", held)
	}
	d.held = held
	return held
}
