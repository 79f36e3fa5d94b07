package tms

import (
	"context"
	"strings"
	"time"
)

// Edit is a change to a pending task (`roster-task edit`); a nil field is
// left as it is.
type Edit struct {
	Text     *string
	At       *time.Time // scheduled_at; the zero time clears it (due now)
	After    *[]string  // the dependencies, replaced; an empty list clears them
	Ceiling  *string    // a duration; "" = the kind's default
	Priority *int
}

// EditTask changes a pending task in place under the lock, as `at`'s
// queue can be changed, and journals it `edited` with the fields changed.
// Only a pending task can be edited: a claimed one or one in review is
// exit 13, a finished one 13 naming its state, an unknown one 12. A
// dependency that would close a cycle is exit 2. Nothing given, or
// nothing different: unchanged, no line.
func (p *Partition) EditTask(ctx context.Context, id string, e Edit, by string) (Task, []string, error) {
	if by == "" {
		by = ByOwner
	}
	if e.Text != nil {
		if err := checkText(*e.Text); err != nil {
			return Task{}, nil, err
		}
	}
	var ceiling string
	if e.Ceiling != nil {
		var err error
		if ceiling, err = checkDuration("ceiling", *e.Ceiling); err != nil {
			return Task{}, nil, err
		}
	}
	t, err := p.begin(ctx)
	if err != nil {
		return Task{}, nil, err
	}
	defer t.end()
	i := t.f.taskIndex(id)
	if i < 0 {
		return Task{}, nil, t.notLive(id, "edit it")
	}
	old := t.f.Tasks[i]
	if old.State != Pending {
		return Task{}, nil, conflict("task %s is %s: only a pending task can be edited", id, old.State)
	}
	nt := cloneTask(old)
	var changed []string
	if e.Text != nil && *e.Text != old.Text {
		nt.Text = *e.Text
		changed = append(changed, "text")
	}
	if e.At != nil {
		var at *time.Time
		if !e.At.IsZero() {
			u := e.At.UTC()
			at = &u
		}
		if !timesEqual(at, old.ScheduledAt) {
			nt.ScheduledAt = at
			changed = append(changed, "scheduled_at")
		}
	}
	if e.After != nil {
		nt.Settled = nil
		if err := t.resolveDeps(&nt, *e.After); err != nil {
			return Task{}, nil, err
		}
		if strings.Join(nt.DependsOn, ",") != strings.Join(old.DependsOn, ",") {
			changed = append(changed, "depends_on")
			t.f.Tasks[i] = nt
			if cyc := findCycles(t.f.Tasks); len(cyc) > 0 {
				t.f.Tasks[i] = old
				return Task{}, nil, usage("task %s: dependency cycle: %s", id, strings.Join(append(cyc[0], cyc[0][0]), " -> "))
			}
		} else {
			nt.DependsOn, nt.Settled = old.DependsOn, old.Settled
		}
	}
	if e.Ceiling != nil && ceiling != old.Ceiling {
		nt.Ceiling = ceiling
		changed = append(changed, "ceiling")
	}
	if e.Priority != nil && *e.Priority != old.Priority {
		nt.Priority = *e.Priority
		changed = append(changed, "priority")
	}
	if len(changed) == 0 {
		t.f.Tasks[i] = old
		return old, nil, nil
	}
	t.f.Tasks[i] = nt
	if _, err := t.emit(Line{Event: EvEdited, Task: id, By: by, Reason: "edited " + strings.Join(changed, ", "),
		Records: []Record{taskRec(nt, false)}}, true); err != nil {
		return Task{}, nil, err
	}
	return nt, changed, t.commit()
}
