package tms

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/errs"
)

// SetInput is a set_tasks request: the worker-editable shape of tasks.json
// (its "tasks" and "templates" arrays) plus the version the writer read.
// A schedule.json is valid input as it is (format, worker and now are
// accepted and ignored).
type SetInput struct {
	Format    int        `json:"format,omitempty"`
	Version   *int64     `json:"version"`
	Worker    string     `json:"worker,omitempty"`
	Now       *time.Time `json:"now,omitempty"`
	Tasks     []Task     `json:"tasks"`
	Templates []Template `json:"templates"`
}

// DecodeSet parses set_tasks input strictly: unknown fields, trailing data
// and unknown formats are refused (exit 2).
func DecodeSet(data []byte) (*SetInput, error) {
	if len(data) > 16<<20 {
		return nil, usage("set input is %d bytes, more than 16 MiB", len(data))
	}
	// Omission cancels, so an input that lacks an array (a missing key,
	// null, {} or not an object at all) would wipe the partition: refused.
	// An explicit empty array is a deliberate cancel-all and allowed.
	const needArrays = "set input must have both \"tasks\" and \"templates\" arrays"
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return nil, usage(needArrays)
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(data, &keys) == nil { // else the strict decoder below words the error
		for _, k := range []string{"tasks", "templates"} {
			if v := bytes.TrimSpace(keys[k]); len(v) == 0 || v[0] != '[' {
				return nil, usage(needArrays)
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var in SetInput
	if err := dec.Decode(&in); err != nil {
		return nil, usage("set input: %v", err)
	}
	if dec.More() {
		return nil, usage("set input: data after the JSON object")
	}
	if in.Format != 0 && in.Format != Format {
		return nil, usage("set input: unknown format %d", in.Format)
	}
	return &in, nil
}

// RefusedError is a set_tasks (or action) that was refused as a whole: it
// lists every refused entry with its reason. It is a conflict (exit 13).
type RefusedError struct{ Refusals []Refusal }

func (e *RefusedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "set refused (%d entr", len(e.Refusals))
	if len(e.Refusals) == 1 {
		b.WriteString("y); nothing changed")
	} else {
		b.WriteString("ies); nothing changed")
	}
	for _, r := range e.Refusals {
		fmt.Fprintf(&b, "\n  %s: %s", r.Entry, r.Reason)
	}
	return b.String()
}
func (e *RefusedError) Unwrap() error { return errs.ErrConflict }

// SetResult is what an accepted set changed.
type SetResult struct {
	Version int64
	Changed []Change
}

func zeroOrEqual(in, old any) bool {
	v := reflect.ValueOf(in)
	if !v.IsValid() || v.IsZero() {
		return true
	}
	return reflect.DeepEqual(in, old)
}

// taskFieldChange returns the first non-editable field the input sets to
// a different value ("" if none).
func taskFieldChange(old, in *Task) string {
	checks := []struct {
		name    string
		in, old any
	}{
		{"kind", in.Kind, old.Kind}, {"state", in.State, old.State}, {"by", in.By, old.By},
		{"attempts", in.Attempts, old.Attempts}, {"template", in.Template, old.Template},
		{"from", in.From, old.From}, {"continues", in.Continues, old.Continues},
		{"refiled_from", in.RefiledFrom, old.RefiledFrom}, {"filed_by", in.FiledBy, old.FiledBy},
		{"last_run", in.LastRun, old.LastRun}, {"ceiling", in.Ceiling, old.Ceiling},
		{"channel", in.Channel, old.Channel},
		{"retries", in.Retries, old.Retries}, {"retried", in.Retried, old.Retried},
	}
	for _, c := range checks {
		if !zeroOrEqual(c.in, c.old) {
			return c.name
		}
	}
	if !in.CreatedAt.IsZero() && !in.CreatedAt.Equal(old.CreatedAt) {
		return "created_at"
	}
	if in.Slot != nil && (old.Slot == nil || !in.Slot.Equal(*old.Slot)) {
		return "slot"
	}
	if in.Claim != nil && (old.Claim == nil || in.Claim.Run != old.Claim.Run) {
		return "claim"
	}
	if len(in.Gates) > 0 && !reflect.DeepEqual(stripGateTimes(in.Gates), stripGateTimes(old.Gates)) {
		return "gates"
	}
	return ""
}

func stripGateTimes(g []Gate) []Gate {
	out := append([]Gate(nil), g...)
	for i := range out {
		out[i].ResolvedAt = nil
	}
	return out
}

func timesEqual(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// editedTaskFields lists the editable fields the input changes.
func editedTaskFields(old, in *Task) []string {
	var out []string
	if in.Text != "" && in.Text != old.Text {
		out = append(out, "text")
	}
	if in.Priority != old.Priority {
		out = append(out, "priority")
	}
	if !timesEqual(in.ScheduledAt, old.ScheduledAt) {
		out = append(out, "scheduled_at")
	}
	if !sameStrings(in.DependsOn, old.DependsOn) {
		out = append(out, "depends_on")
	}
	if in.Standing != "" && in.Standing != old.Standing {
		out = append(out, "standing")
	}
	return out
}

// SetTasks applies a set_tasks request with the worker's rules (docs/tasks.md,
// "set_tasks"), all or nothing: a stale version is exit 13 and changes
// nothing; any refused entry refuses the whole set with a RefusedError
// (exit 13) listing every refusal. by is who asks: ByWorker from a box,
// ByOwner from `roster-task set` on the host; entries it creates carry it,
// and it may edit the text only of tasks it filed. An accepted set is one
// `set` journal line and one version.
func (p *Partition) SetTasks(ctx context.Context, in *SetInput, by string) (*SetResult, error) {
	if b, err := json.Marshal(in); err == nil && len(b) > MaxSetBytes {
		return nil, usage("set: the request is %d bytes, more than the %d MiB limit of one set", len(b), MaxSetBytes>>20)
	}
	var res *SetResult
	err := p.withHistory(func(h *history) error {
		var err error
		res, err = p.setTasks(ctx, in, by, h)
		return err
	})
	return res, err
}

// setTasks is SetTasks's change, under the lock; h is the history (for a
// dependency on a task that is not live), or nil until one needs it.
func (p *Partition) setTasks(ctx context.Context, in *SetInput, by string, h *history) (*SetResult, error) {
	t, err := p.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer t.end()
	if err := t.useHistory(h); err != nil {
		return nil, err
	}
	res, lines, err := t.planSet(in, by)
	if err != nil {
		return nil, err
	}
	for _, l := range lines {
		if _, err := t.emit(l, true); err != nil {
			return nil, err
		}
	}
	if err := t.syncSpec(); err != nil { // before the version is reported
		return nil, err
	}
	res.Version = t.ver
	return res, t.commit()
}

// planSet checks a set and, when every entry is allowed, applies it to
// t.f and returns the journal line(s) to emit. Its steps: the tasks
// listed, the pending tasks left out (canceled), the dependencies, the
// templates listed and left out; then, if nothing was refused, the
// records of every touched entry.
func (t *txn) planSet(in *SetInput, by string) (*SetResult, []Line, error) {
	if in.Version == nil {
		return nil, nil, usage("set: the version read is required")
	}
	if *in.Version != t.f.Version {
		return nil, nil, errs.WithHint(conflict("set: stale version %d (the partition is at version %d); nothing changed", *in.Version, t.f.Version),
			"re-read the schedule and retry")
	}
	s := &setPlan{t: t, by: by, cur: t.f, seen: map[string]bool{}}
	s.planTasks(in.Tasks)
	s.cancelOmitted()
	if err := s.checkDeps(); err != nil {
		return nil, nil, err
	}
	for _, cyc := range findCycles(s.result) {
		s.refuse(cyc[0], "dependency cycle: %s", strings.Join(append(cyc, cyc[0]), " -> "))
	}
	s.planTemplates(in.Templates)
	if n := len(s.result); n > MaxOpenTasks && n > len(t.f.Tasks) {
		s.refuse("tasks", "the set leaves %d open tasks, more than the limit of %d per partition", n, MaxOpenTasks)
	}
	if b := textBytes(s.result); b > MaxOpenText && b > textBytes(t.f.Tasks) {
		s.refuse("tasks", "the set leaves %d bytes of open tasks' text, more than the limit of %d MiB per partition", b, MaxOpenText>>20)
	}
	if n := len(s.tpls); n > MaxTemplates && n > len(t.f.Templates) {
		s.refuse("templates", "the set leaves %d templates, more than the limit of %d per partition", n, MaxTemplates)
	}
	if len(s.refused) > 0 {
		return nil, nil, &RefusedError{Refusals: s.refused}
	}
	s.recordTasks()
	res := &SetResult{Version: t.f.Version, Changed: s.changes}
	if len(s.changes) == 0 {
		return res, nil, nil
	}
	t.f.Tasks = s.result
	t.f.Templates = s.tpls
	return res, []Line{{Event: EvSet, By: by, Changed: s.changes, Records: s.recs}}, nil
}

// setPlan is a set being checked: the tasks and templates it leaves, what
// it changes and records, and every refusal so far. Nothing is written.
type setPlan struct {
	t        *txn
	by       string
	cur      *File
	refused  []Refusal
	seen     map[string]bool // task ids listed or created
	result   []Task          // the tasks the set leaves in tasks.json
	canceled []Task          // pending tasks left out
	tpls     []Template      // the templates the set leaves
	changes  []Change
	recs     []Record
}

func (s *setPlan) refuse(entry, format string, args ...any) {
	s.refused = append(s.refused, Refusal{Entry: entry, Reason: fmt.Sprintf(format, args...)})
}

// planTasks checks every listed task: a new one (no id) is created, a
// pending one edited, any other kept as it is.
func (s *setPlan) planTasks(entries []Task) {
	newN := 0
	for k := range entries {
		e := entries[k]
		if e.ID == "" {
			newN++
			s.createTask(fmt.Sprintf("new task %d", newN), &e)
			continue
		}
		if s.seen[e.ID] {
			s.refuse(e.ID, "listed twice")
			continue
		}
		s.seen[e.ID] = true
		old := s.cur.Task(e.ID)
		if old == nil {
			s.refuse(e.ID, "no such pending task (leave id empty to create one)")
			continue
		}
		s.editTask(old, &e)
	}
}

// createTask files e as a new proactive task of kind filed.
func (s *setPlan) createTask(name string, e *Task) {
	t := s.t
	if e.Standing == Owner {
		s.refuse(name, "creating owner entries is not allowed")
		return
	}
	if err := checkText(e.Text); err != nil {
		s.refuse(name, "%v", err)
		return
	}
	if e.Kind != "" && e.Kind != KindFiled {
		s.refuse(name, "new tasks are of kind filed")
		return
	}
	nt := Task{ID: t.newTaskID(), Text: e.Text, Kind: KindFiled, Standing: Proactive, State: Pending,
		CreatedAt: t.now, ScheduledAt: e.ScheduledAt, DependsOn: e.DependsOn, Priority: e.Priority, By: s.by}
	var err error
	if nt.Ceiling, err = checkDuration("ceiling", e.Ceiling); err != nil {
		s.refuse(name, "%v", err)
		return
	}
	if why := s.raisesCeiling(KindFiled, nt.Ceiling); why != "" {
		s.refuse(name, "%s", why)
		return
	}
	if e.Channel != "" {
		s.refuse(name, "the channel of a task cannot be set")
		return
	}
	for s.seen[nt.ID] || s.cur.Task(nt.ID) != nil {
		nt.ID = t.newTaskID()
	}
	s.seen[nt.ID] = true
	s.result = append(s.result, nt)
	s.changes = append(s.changes, Change{nt.ID, "created"})
}

// editTask applies e's edits to the pending task old; a task in any other
// state may only be listed unchanged.
func (s *setPlan) editTask(old, e *Task) {
	edited := editedTaskFields(old, e)
	field := taskFieldChange(old, e)
	if old.State != Pending {
		if len(edited) > 0 || field != "" {
			s.refuse(e.ID, "task is %s; it cannot be changed", old.State)
		}
		s.result = append(s.result, cloneTask(*old))
		return
	}
	if field != "" {
		s.refuse(e.ID, "field %s cannot be changed", field)
		return
	}
	nt := cloneTask(*old)
	for _, f := range edited {
		switch f {
		case "text":
			if old.By != s.by {
				s.refuse(e.ID, "editing the text of an entry it did not file (by %s) is not allowed", old.By)
				continue
			}
			if err := checkText(e.Text); err != nil {
				s.refuse(e.ID, "%v", err)
				continue
			}
			nt.Text = e.Text
		case "priority":
			nt.Priority = e.Priority
		case "scheduled_at":
			nt.ScheduledAt = e.ScheduledAt
		case "depends_on":
			nt.DependsOn = append([]string(nil), e.DependsOn...)
		case "standing":
			if e.Standing == Owner {
				s.refuse(e.ID, "raising standing to owner is not allowed")
				continue
			}
			if !validStanding(e.Standing) {
				s.refuse(e.ID, "standing %q: must be owner or proactive", e.Standing)
				continue
			}
			nt.Standing = e.Standing
		}
	}
	s.result = append(s.result, nt)
	if len(edited) > 0 {
		s.changes = append(s.changes, Change{nt.ID, "changed: " + strings.Join(edited, ", ")})
	}
}

// cancelOmitted cancels the pending tasks the set leaves out, the only
// ones the worker may cancel; the others stay.
func (s *setPlan) cancelOmitted() {
	for _, old := range s.cur.Tasks {
		if s.seen[old.ID] {
			continue
		}
		if old.State == Pending {
			c := cloneTask(old)
			c.State = Canceled
			now := s.t.now
			c.FinishedAt = &now
			s.canceled = append(s.canceled, c)
			s.changes = append(s.changes, Change{old.ID, "canceled"})
			continue
		}
		s.result = append(s.result, cloneTask(old))
	}
}

// checkDeps refuses a pending task's dependency that does not exist
// (live, canceled here, or finished) and settles the ones that ended.
func (s *setPlan) checkDeps() error {
	live := map[string]*Task{}
	for i := range s.result {
		live[s.result[i].ID] = &s.result[i]
	}
	canceledIDs := map[string]bool{}
	for _, c := range s.canceled {
		canceledIDs[c.ID] = true
	}
	for i := range s.result {
		nt := &s.result[i]
		if nt.State != Pending {
			continue
		}
		for _, d := range nt.DependsOn {
			switch {
			case d == nt.ID:
				s.refuse(nt.ID, "depends on itself")
			case live[d] != nil:
			case canceledIDs[d]:
				if nt.Settled == nil {
					nt.Settled = map[string]string{}
				}
				nt.Settled[d] = Canceled
			case nt.Settled[d] != "":
			default:
				st, err := s.t.finishedState(d)
				if err != nil {
					return err
				}
				if st != "" {
					if nt.Settled == nil {
						nt.Settled = map[string]string{}
					}
					nt.Settled[d] = st
				} else {
					s.refuse(nt.ID, "unknown dependency %s", d)
				}
			}
		}
		for d := range nt.Settled {
			if !contains(nt.DependsOn, d) {
				delete(nt.Settled, d)
			}
		}
		if len(nt.Settled) == 0 {
			nt.Settled = nil
		}
	}
	return nil
}

// recordTasks records the canceled tasks and every task the set touched,
// including dependents that only had a dependency settled.
func (s *setPlan) recordTasks() {
	byID := map[string]bool{}
	for _, c := range s.changes {
		byID[c.Entry] = true
	}
	for _, c := range s.canceled {
		s.recs = append(s.recs, taskRec(c, true))
	}
	for i := range s.result {
		old := s.cur.Task(s.result[i].ID)
		if old == nil || byID[s.result[i].ID] || !reflect.DeepEqual(*old, s.result[i]) {
			if old != nil && !byID[s.result[i].ID] {
				s.changes = append(s.changes, Change{s.result[i].ID, "settled"})
			}
			s.recs = append(s.recs, taskRec(s.result[i], false))
		}
	}
}

// findCycles returns each dependency cycle among tasks once, as the ids on
// it in order.
func findCycles(tasks []Task) [][]string {
	idx := map[string]*Task{}
	for i := range tasks {
		idx[tasks[i].ID] = &tasks[i]
	}
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var out [][]string
	var visit func(id string)
	visit = func(id string) {
		color[id] = grey
		stack = append(stack, id)
		for _, d := range idx[id].DependsOn {
			if idx[d] == nil {
				continue
			}
			switch color[d] {
			case white:
				visit(d)
			case grey:
				for i := len(stack) - 1; i >= 0; i-- {
					if stack[i] == d {
						out = append(out, append([]string(nil), stack[i:]...))
						break
					}
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = black
	}
	for i := range tasks {
		if color[tasks[i].ID] == white {
			visit(tasks[i].ID)
		}
	}
	return out
}
