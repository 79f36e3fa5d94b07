package tms

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
)

// NewTask is what Add files.
type NewTask struct {
	Text     string
	Kind     string     // default filed
	Standing string     // default: owner for a person's filed task, proactive otherwise
	By       string     // default owner
	At       *time.Time // scheduled_at; in the past means due now
	After    []string   // dependencies: ids or unique prefixes of this worker's tasks
	Ceiling  string     // a duration; "" = the kind's default
	Channel  string
	From     string // a relay's sender
	Priority int
}

// StartGrace is how young a claim with no box.json yet may be and still
// never be reclaimed or requeued: its supervisor may still be starting.
// A claim whose run.json records the run's end is not protected (BoxGone).
const StartGrace = 30 * time.Second

func usage(format string, args ...any) error {
	return errs.New(errs.ErrUsage, fmt.Sprintf(format, args...))
}

func conflict(format string, args ...any) error {
	return errs.New(errs.ErrConflict, fmt.Sprintf(format, args...))
}

func notFound(format string, args ...any) error {
	return errs.New(errs.ErrNotFound, fmt.Sprintf(format, args...))
}

func validKind(k string) bool {
	switch k {
	case KindFiled, KindRecurring, KindRelay, KindHeartbeat, KindContinuation:
		return true
	}
	return false
}

func validStanding(s string) bool { return s == Owner || s == Proactive }

// checkDuration normalizes an optional duration field ("" stays "").
func checkDuration(what, s string) (string, error) {
	if s == "" {
		return "", nil
	}
	d, err := config.ParseDuration(s, false)
	if err != nil {
		return "", usage("%s: %v", what, err)
	}
	return config.FormatDuration(d), nil
}

// checkText refuses empty or oversized text.
func checkText(text string) error {
	if strings.TrimSpace(text) == "" {
		return usage("task text is empty")
	}
	if len(text) > MaxText {
		return usage("task text is %d bytes, more than the 1 MiB limit", len(text))
	}
	return nil
}

// Add files a new pending task and returns it. It reads tasks.json and the
// journal's tail only (never the whole journal, unless a dependency names
// a task that has already finished).
func (p *Partition) Add(ctx context.Context, nt NewTask) (Task, error) {
	if err := checkText(nt.Text); err != nil {
		return Task{}, err
	}
	if nt.Kind == "" {
		nt.Kind = KindFiled
	}
	if !validKind(nt.Kind) {
		return Task{}, usage("unknown task kind %q", nt.Kind)
	}
	if nt.By == "" {
		nt.By = ByOwner
	}
	if nt.Standing == "" {
		nt.Standing = Proactive
		if nt.Kind == KindFiled && nt.By == ByOwner {
			nt.Standing = Owner
		}
	}
	if !validStanding(nt.Standing) {
		return Task{}, usage("standing %q: must be owner or proactive", nt.Standing)
	}
	ceiling, err := checkDuration("ceiling", nt.Ceiling)
	if err != nil {
		return Task{}, err
	}
	if nt.Channel != "" {
		if _, err := home.EncodeChannel(nt.Channel); err != nil {
			return Task{}, err
		}
	}
	t, err := p.beginRaw(ctx, true)
	if err != nil {
		return Task{}, err
	}
	defer t.end()
	task := Task{
		Text: nt.Text, Kind: nt.Kind, Standing: nt.Standing, State: Pending,
		CreatedAt: t.now, Ceiling: ceiling, Channel: nt.Channel, From: nt.From,
		Priority: nt.Priority, By: nt.By,
	}
	if nt.At != nil {
		at := nt.At.UTC()
		task.ScheduledAt = &at
	}
	if err := t.resolveDeps(&task, nt.After); err != nil {
		return Task{}, err
	}
	task.ID = t.newTaskID()
	if t.raw != nil {
		t.raw.added = append(t.raw.added, task)
	} else {
		t.f.Tasks = append(t.f.Tasks, task)
	}
	if _, err := t.emit(Line{Event: EvFiled, Task: task.ID, By: nt.By, Records: []Record{taskRec(task, false)}}, true); err != nil {
		return Task{}, err
	}
	return task, t.commit()
}

// Relay files a chat message as a relay task (proactive; its text is
// untrusted content that directs attention and never commands).
func (p *Partition) Relay(ctx context.Context, channel, from, text string) (Task, error) {
	if channel == "" {
		return Task{}, usage("relay: --channel is required")
	}
	return p.Add(ctx, NewTask{Text: text, Kind: KindRelay, Standing: Proactive, Channel: channel, From: from})
}

func (t *txn) newTaskID() string {
	for {
		id := home.NewTaskID(t.now)
		if !t.hasTask(id) {
			return id
		}
	}
}

// resolveDeps resolves dependency prefixes against the live tasks, then the
// finished ones in the journal; an unknown dependency is exit 2.
func (t *txn) resolveDeps(task *Task, after []string) error {
	var finished map[string]Task
	task.DependsOn = nil
	if len(after) == 0 {
		return nil
	}
	ids := t.taskIDs()
	for _, a := range after {
		id, err := home.Resolve("task", a, ids)
		if err == nil {
			if id == task.ID {
				return usage("task %s cannot depend on itself", id)
			}
			if !contains(task.DependsOn, id) {
				task.DependsOn = append(task.DependsOn, id)
			}
			continue
		}
		if !errors.Is(err, errs.ErrNotFound) {
			return err
		}
		if finished == nil {
			if finished, err = finishedTasks(t.p.W.Journal()); err != nil {
				return err
			}
		}
		var fids []string
		for id := range finished {
			fids = append(fids, id)
		}
		id, err = home.Resolve("task", a, fids)
		if err != nil {
			if errors.Is(err, errs.ErrNotFound) {
				return usage("unknown dependency %q: no such task in worker %s", a, t.p.Name)
			}
			return err
		}
		if !contains(task.DependsOn, id) {
			task.DependsOn = append(task.DependsOn, id)
		}
		if task.Settled == nil {
			task.Settled = map[string]string{}
		}
		task.Settled[id] = finished[id].State
	}
	return nil
}

// hasTask tells whether tasks.json (as this change leaves it) holds id.
func (t *txn) hasTask(id string) bool {
	if t.raw != nil {
		return t.raw.has(id)
	}
	return t.f.Task(id) != nil
}

// taskIDs lists the ids of tasks.json's tasks.
func (t *txn) taskIDs() []string {
	if t.raw != nil {
		ids := make([]string, 0, len(t.raw.ids)+len(t.raw.added))
		for id := range t.raw.ids {
			ids = append(ids, id)
		}
		for i := range t.raw.added {
			ids = append(ids, t.raw.added[i].ID)
		}
		return ids
	}
	ids := make([]string, len(t.f.Tasks))
	for i := range t.f.Tasks {
		ids[i] = t.f.Tasks[i].ID
	}
	return ids
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// finishedTasks reads the journal for every task that left tasks.json,
// as it last left it.
func finishedTasks(path string) (map[string]Task, error) {
	out, _, err := finishedWithLines(path)
	return out, err
}

// finishedWithLines is finishedTasks plus, for each finished task, the
// journal line that finished it (without its records).
func finishedWithLines(path string) (map[string]Task, map[string]Line, error) {
	lines, err := readJournal(path, 0)
	if err != nil {
		return nil, nil, err
	}
	out, ends := map[string]Task{}, map[string]Line{}
	for _, l := range lines {
		for _, r := range l.Records {
			if r.Task == nil {
				continue
			}
			if r.Removed {
				out[r.Task.ID] = *r.Task
				e := l
				e.Records = nil
				ends[r.Task.ID] = e
			} else {
				delete(out, r.Task.ID)
				delete(ends, r.Task.ID)
			}
		}
	}
	return out, ends, nil
}

// finish removes task i from the file with its final state, settles its
// dependents and journals the change (one line, one version).
func (t *txn) finish(id, state, event, run, by, reason string, ev *runs.Evidence) (Task, error) {
	i := t.f.taskIndex(id)
	task := cloneTask(t.f.Tasks[i])
	task.State = state
	task.Claim = nil
	if run != "" {
		task.LastRun = run
	}
	now := t.now
	task.FinishedAt = &now
	t.f.Tasks = append(t.f.Tasks[:i], t.f.Tasks[i+1:]...)
	recs := []Record{taskRec(task, true)}
	for k := range t.f.Tasks {
		d := &t.f.Tasks[k]
		if contains(d.DependsOn, id) {
			if d.Settled == nil {
				d.Settled = map[string]string{}
			}
			d.Settled[id] = state
			recs = append(recs, taskRec(*d, false))
		}
	}
	_, err := t.emit(Line{Event: event, Task: id, Run: run, By: by, Reason: reason, Evidence: ev, Records: recs}, true)
	return task, err
}

// Get returns a live task (pending, claimed or needs-review) by exact id.
func (p *Partition) Get(ctx context.Context, id string) (Task, error) {
	f, err := p.Read(ctx)
	if err != nil {
		return Task{}, err
	}
	if task := f.Task(id); task != nil {
		return *task, nil
	}
	return Task{}, notFound("task %s: not in worker %s's list", id, p.Name)
}

// Show returns a task by exact id: a live one from tasks.json, else a
// finished one from the journal (reading it).
func (p *Partition) Show(ctx context.Context, id string) (Task, error) {
	task, err := p.Get(ctx, id)
	if err == nil || !errors.Is(err, errs.ErrNotFound) {
		return task, err
	}
	fin, err := finishedTasks(p.W.Journal())
	if err != nil {
		return Task{}, err
	}
	if t, ok := fin[id]; ok {
		return t, nil
	}
	return Task{}, notFound("task %s: not found in worker %s", id, p.Name)
}

// ShowEnded is Show that, for a finished task, also returns the journal
// line that finished it: its event, who ended it, the reason (a cancel's
// why) and the evidence of the run's end. A live task has no such line
// (nil).
func (p *Partition) ShowEnded(ctx context.Context, id string) (Task, *Line, error) {
	task, err := p.Get(ctx, id)
	if err == nil || !errors.Is(err, errs.ErrNotFound) {
		return task, nil, err
	}
	fin, ends, err := finishedWithLines(p.W.Journal())
	if err != nil {
		return Task{}, nil, err
	}
	if t, ok := fin[id]; ok {
		e := ends[id]
		return t, &e, nil
	}
	return Task{}, nil, notFound("task %s: not found in worker %s", id, p.Name)
}

// Read returns the partition as it is now (rolled forward if need be).
func (p *Partition) Read(ctx context.Context) (*File, error) {
	t, err := p.begin(ctx)
	if err != nil {
		return nil, err
	}
	t.end()
	return t.f, nil
}

// Cancel ends a task: a pending or needs-review one is canceled; a claimed
// one is recorded canceled under the lock and its run id returned, for the
// caller to kill its box (the supervisor, finding the claim gone, attests
// nothing).
func (p *Partition) Cancel(ctx context.Context, id, why, by string) (run string, err error) {
	t, err := p.begin(ctx)
	if err != nil {
		return "", err
	}
	defer t.end()
	task := t.f.Task(id)
	if task == nil {
		return "", p.notLive(id, "cancel it")
	}
	if task.Claim != nil {
		run = task.Claim.Run
	}
	if by == "" {
		by = ByOwner
	}
	if _, err := t.finish(id, Canceled, EvCanceled, run, by, why, nil); err != nil {
		return "", err
	}
	return run, t.commit()
}

// BoxGone says whether the box of a claim (the run in runDir, claimed at
// claimedAt) is certainly not running, and if not, why:
//
//   - box.json names a live supervisor (pid, start time and boot id): not
//     gone, whatever run.json says (a supervisor past its run's end is still
//     attesting and taking the post-run snapshot);
//   - box.json names a dead supervisor: gone;
//   - run.json records the run's end (`ended`: the supervisor or the
//     reaper wrote it): gone, whatever the claim's age;
//   - neither, and the claim is younger than StartGrace: not gone (its
//     supervisor may still be starting); older: gone.
//
// box.json is never removed once written (by the supervisor or the
// reaper): it is the run's record of who supervised it, and a stale one
// is harmless because liveness never trusts the file alone.
func BoxGone(runDir string, claimedAt, now time.Time) (bool, string) {
	run := filepath.Base(runDir)
	b, err := runs.ReadBoxInfo(runDir)
	switch {
	case err == nil && b.Alive():
		return false, fmt.Sprintf("its box (run %s, pid %d) is alive", run, b.PID)
	case err == nil:
		return true, ""
	case !errors.Is(err, fs.ErrNotExist):
		return true, "" // unreadable box.json: refused, never trusted as alive
	}
	if r, err := runs.ReadRecord(runDir); err == nil && r.Ended != "" {
		return true, ""
	}
	if now.Sub(claimedAt) < StartGrace {
		return false, fmt.Sprintf("run %s was claimed %s ago and has no box.json yet (its supervisor may still be starting)", run, now.Sub(claimedAt).Round(time.Second))
	}
	return true, ""
}

func (p *Partition) boxGone(c *Claim, now time.Time) (bool, string) {
	return BoxGone(p.W.Run(c.Run), c.At, now)
}

// Requeue puts a claimed task whose box is dead, or a needs-review task,
// back to pending; a finished task is filed again as a new pending task
// (new id, the journal links both) whose id is returned. It reaps nothing:
// the command line uses RequeueReaping.
func (p *Partition) Requeue(ctx context.Context, id, by string) (Task, error) {
	return p.RequeueReaping(ctx, id, by, nil)
}

// RequeueReaping is Requeue that, for a claimed task whose box is dead and
// whose run folder exists, first calls reap(run) under the partition lock
// (`roster-box reap RUN`: a container can outlive its dead supervisor, and
// the task must never run twice at once). A reap error refuses the
// requeue (exit 13, nothing changes) with a hint to reap by hand. A nil
// reap is not called.
func (p *Partition) RequeueReaping(ctx context.Context, id, by string, reap func(run string) error) (Task, error) {
	if by == "" {
		by = ByOwner
	}
	t, err := p.begin(ctx)
	if err != nil {
		return Task{}, err
	}
	defer t.end()
	if task := t.f.Task(id); task != nil {
		switch task.State {
		case Pending:
			return Task{}, conflict("task %s is already pending", id)
		case Claimed:
			if gone, why := p.boxGone(task.Claim, t.now); !gone {
				return Task{}, errs.WithHint(conflict("task %s is claimed and %s", id, why),
					"cancel it instead, or wait for its box to end")
			}
		}
		run := ""
		if task.Claim != nil {
			run = task.Claim.Run
		}
		if task.State == Claimed && run != "" && reap != nil {
			if _, err := os.Lstat(p.W.Run(run)); err == nil { // no run folder: no box was ever started
				if err := reap(run); err != nil {
					return Task{}, errs.WithHint(conflict("task %s: its box (run %s) is not reaped: %v", id, run, err),
						fmt.Sprintf("run `roster-box reap %s`, then requeue again", run))
				}
			}
		}
		task.State = Pending
		task.Claim = nil
		if _, err := t.emit(Line{Event: EvRequeued, Task: id, Run: run, By: by, Records: []Record{taskRec(*task, false)}}, true); err != nil {
			return Task{}, err
		}
		return *task, t.commit()
	}
	fin, err := finishedTasks(p.W.Journal())
	if err != nil {
		return Task{}, err
	}
	old, ok := fin[id]
	if !ok {
		return Task{}, notFound("task %s: not found in worker %s", id, p.Name)
	}
	task := cloneTask(old)
	task.ID = t.newTaskID()
	task.State = Pending
	task.CreatedAt = t.now
	task.Claim = nil
	task.FinishedAt = nil
	task.Attempts = 0
	task.Gates = nil
	task.LastRun = ""
	task.RefiledFrom = old.ID
	task.Slot = nil
	task.Template = ""
	task.ScheduledAt = nil
	for _, d := range task.DependsOn { // dependencies still live keep it waiting
		if t.f.Task(d) != nil {
			delete(task.Settled, d)
		}
	}
	t.f.Tasks = append(t.f.Tasks, task)
	if _, err := t.emit(Line{Event: EvRequeued, Task: task.ID, From: old.ID, By: by, Records: []Record{taskRec(task, false)}}, true); err != nil {
		return Task{}, err
	}
	return task, t.commit()
}

// Claim marks a pending, claimable task claimed for run (journal
// `claimed`). A task that is not pending, or not claimable now, is a
// conflict (exit 13): another dispatcher or a person got there first.
func (p *Partition) Claim(ctx context.Context, id, run string) (Task, error) {
	if !home.IsRunID(run) {
		return Task{}, usage("run id %q: not of the form YYYY-MM-DD-HH-MM-SS-xxxx", run)
	}
	t, err := p.begin(ctx)
	if err != nil {
		return Task{}, err
	}
	defer t.end()
	task := t.f.Task(id)
	if task == nil {
		return Task{}, notFound("task %s: not in worker %s's list", id, p.Name)
	}
	if task.State != Pending {
		return Task{}, conflict("task %s is %s, not pending", id, task.State)
	}
	if e := eligibility(t.f, task, t.now); e.Status != StateDue {
		return Task{}, conflict("task %s is not claimable: %s", id, e.Why)
	}
	task.State = Claimed
	task.Claim = &Claim{Run: run, At: t.now}
	if _, err := t.emit(Line{Event: EvClaimed, Task: id, Run: run, By: ByHost, Records: []Record{taskRec(*task, false)}}, true); err != nil {
		return Task{}, err
	}
	return *task, t.commit()
}

// StillClaimed is the re-check the supervisor makes under the partition
// lock before it starts the container and before it records the outcome:
// does the task's claim still name run? False means the task was canceled
// or reclaimed meanwhile.
func (p *Partition) StillClaimed(ctx context.Context, id, run string) (bool, error) {
	f, err := p.Read(ctx)
	if err != nil {
		return false, err
	}
	task := f.Task(id)
	return task != nil && task.State == Claimed && task.Claim != nil && task.Claim.Run == run, nil
}

// Attested reports how the host judged a run's task.
const (
	AttestedCompleted   = Completed
	AttestedFailed      = Failed
	AttestedNeedsReview = NeedsReview
	AttestedCanceled    = Canceled
)

// Judge is the host's attestation rule on its own: completed only if the
// command exited 0 (no signal), the box reported complete and no ceiling
// was hit; failed otherwise. It fills in a note for a silent run.
func Judge(ev *runs.Evidence) string {
	ok := ev.Exit == 0 && ev.Signal == "" && !ev.Ceiling && ev.Report == "complete"
	if ok {
		return Completed
	}
	if ev.Report == "" || ev.Report == "none" {
		ev.Report = "none"
		if ev.Note == "" {
			ev.Note = "no report"
			if ev.RefusedActions > 0 {
				ev.Note = fmt.Sprintf("no report after %d refused action(s)", ev.RefusedActions)
			}
		}
	}
	return Failed
}

// Attest records the host's judgement of run's end on its task, under the
// lock: completed, failed (with ev as the evidence), needs-review (would
// be completed but a gate is still pending) — or canceled, changing
// nothing, when the task's claim no longer names run.
func (p *Partition) Attest(ctx context.Context, id, run string, ev runs.Evidence) (string, error) {
	t, err := p.begin(ctx)
	if err != nil {
		return "", err
	}
	defer t.end()
	task := t.f.Task(id)
	if task == nil || task.State != Claimed || task.Claim == nil || task.Claim.Run != run {
		return AttestedCanceled, nil
	}
	verdict := Judge(&ev)
	if verdict == Completed && pendingGates(task) > 0 {
		task.State = NeedsReview
		task.Claim = nil
		task.LastRun = run
		if _, err := t.emit(Line{Event: EvNeedsReview, Task: id, Run: run, By: ByHost, Evidence: &ev, Records: []Record{taskRec(*task, false)}}, true); err != nil {
			return "", err
		}
		return NeedsReview, t.commit()
	}
	event := EvCompleted
	if verdict == Failed {
		event = EvFailed
	}
	if _, err := t.finish(id, verdict, event, run, ByHost, ev.Reason, &ev); err != nil {
		return "", err
	}
	return verdict, t.commit()
}

func pendingGates(t *Task) int {
	n := 0
	for _, g := range t.Gates {
		if g.State == GatePending {
			n++
		}
	}
	return n
}

// Reclaim handles a claimed task whose box is gone: back to pending with
// attempts + 1 (journal `reclaimed`), or, at the MaxReclaims-th loss,
// failed with evidence "box lost 3 times". It refuses (exit 13) when the
// claim no longer names run, or when its box is not certainly gone
// (BoxGone: alive, or a claim younger than StartGrace with neither
// box.json nor a recorded end). It returns the task's new state.
func (p *Partition) Reclaim(ctx context.Context, id, run, note string) (string, error) {
	t, err := p.begin(ctx)
	if err != nil {
		return "", err
	}
	defer t.end()
	task := t.f.Task(id)
	if task == nil || task.State != Claimed || task.Claim == nil || task.Claim.Run != run {
		return "", conflict("task %s is not claimed by run %s", id, run)
	}
	if gone, why := p.boxGone(task.Claim, t.now); !gone {
		return "", conflict("task %s: not reclaimed: %s", id, why)
	}
	task.Attempts++
	if task.Attempts >= MaxReclaims {
		ev := &runs.Evidence{Exit: -1, Report: "none", Note: fmt.Sprintf("box lost %d times", task.Attempts)} // exit -1: no exit status was seen
		if note != "" {
			ev.Reason = note
		}
		if _, err := t.finish(id, Failed, EvFailed, run, ByHost, ev.Note, ev); err != nil {
			return "", err
		}
		return Failed, t.commit()
	}
	task.State = Pending
	task.Claim = nil
	if _, err := t.emit(Line{Event: EvReclaimed, Task: id, Run: run, By: ByHost, Reason: note, Records: []Record{taskRec(*task, false)}}, true); err != nil {
		return "", err
	}
	return Pending, t.commit()
}

// ResolveGate records an operator's decision on one gate of a task
// (journal `gate-resolved`, by owner). On a claimed task it only records
// it; when the last pending gate of a needs-review task resolves, the task
// completes, and if any of its gates asked to wake, a continuation task
// (the original's standing) is filed whose text carries every gate's
// outcome. It returns the continuation's id, if one was filed.
func (p *Partition) ResolveGate(ctx context.Context, id, gate, decision, why string) (string, error) {
	switch decision {
	case "approve", GateApproved:
		decision = GateApproved
	case "deny", GateDenied:
		decision = GateDenied
	default:
		return "", usage("decision %q: must be approve or deny", decision)
	}
	t, err := p.begin(ctx)
	if err != nil {
		return "", err
	}
	defer t.end()
	task := t.f.Task(id)
	if task == nil {
		return "", p.notLive(id, "resolve its gates")
	}
	gi := -1
	for i, g := range task.Gates {
		if g.ID == gate {
			gi = i
		}
	}
	if gi < 0 {
		return "", notFound("task %s has no gate %q", id, gate)
	}
	if task.Gates[gi].State != GatePending {
		return "", conflict("gate %s of task %s is already %s", gate, id, task.Gates[gi].State)
	}
	now := t.now
	task.Gates[gi].State = decision
	task.Gates[gi].Why = why
	task.Gates[gi].ResolvedAt = &now
	if _, err := t.emit(Line{Event: EvGateResolved, Task: id, Gate: gate, Decision: decision, Reason: why, By: ByOwner, Records: []Record{taskRec(*task, false)}}, true); err != nil {
		return "", err
	}
	cont := ""
	if task.State == NeedsReview && pendingGates(task) == 0 {
		orig := cloneTask(*task)
		if _, err := t.finish(id, Completed, EvCompleted, orig.LastRun, ByOwner, "last gate resolved", nil); err != nil {
			return "", err
		}
		wake := false
		var b strings.Builder
		fmt.Fprintf(&b, "Continue task %s now that its gates are decided.\n\nThe task was:\n%s\n\nGate outcomes:\n", orig.ID, orig.Text)
		for _, g := range orig.Gates {
			wake = wake || g.Wake
			fmt.Fprintf(&b, "- %s %q: %s", g.ID, g.What, g.State)
			if g.Why != "" {
				fmt.Fprintf(&b, " (%s)", g.Why)
			}
			b.WriteString("\n")
		}
		if wake {
			c := Task{ID: t.newTaskID(), Text: b.String(), Kind: KindContinuation, Standing: orig.Standing,
				State: Pending, CreatedAt: t.now, Channel: orig.Channel, Priority: orig.Priority, By: ByHost,
				Continues: orig.ID}
			if orig.Kind == KindRelay || orig.From != "" {
				c.From = orig.From // its text repeats an untrusted message: the briefing quotes it
				if c.From == "" {
					c.From = "someone"
				}
			}
			t.f.Tasks = append(t.f.Tasks, c)
			if _, err := t.emit(Line{Event: EvFiled, Task: c.ID, By: ByHost, From: orig.ID, Records: []Record{taskRec(c, false)}}, true); err != nil {
				return "", err
			}
			cont = c.ID
		}
	}
	return cont, t.commit()
}

// LiveClaims counts the partition's claimed tasks (the dispatcher's
// per-worker concurrency count, which survives its restarts).
func (p *Partition) LiveClaims(ctx context.Context) (int, error) {
	f, err := p.Read(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range f.Tasks {
		if f.Tasks[i].State == Claimed {
			n++
		}
	}
	return n, nil
}

// CeilingOf is the wall-clock limit of a run of task: its own ceiling, or
// the org's default for its kind.
func (p *Partition) CeilingOf(task *Task) time.Duration {
	if task.Ceiling != "" {
		if d, err := time.ParseDuration(task.Ceiling); err == nil && d > 0 {
			return d
		}
	}
	return p.Org.Ceiling(task.Kind)
}

func sortedKeys(m map[string]string) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

var _ = os.Getpid
