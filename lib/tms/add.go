package tms

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
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
	Msg      string // a relay's network message id: filing (Channel, Msg) again returns the first task
	Priority int
	Retries  int // automatic retries of a failed run (0..MaxRetries)
}

// MaxRetries bounds --retries.
const MaxRetries = 100

func checkRetries(n int) error {
	if n < 0 || n > MaxRetries {
		return usage("retries %d: must be 0 to %d", n, MaxRetries)
	}
	return nil
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
		return usage("task text is %d bytes, more than the %d KiB limit of a task's text", len(text), MaxText>>10)
	}
	return nil
}

// Add files a new pending task and returns it. It reads tasks.json and the
// journal's tail only; a dependency that names a task that is not live is
// found in the history index, read before the lock (history.go).
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
	if err := checkRetries(nt.Retries); err != nil {
		return Task{}, err
	}
	if nt.Channel != "" {
		if _, err := home.EncodeChannel(nt.Channel); err != nil {
			return Task{}, err
		}
	}
	var task Task
	err = p.withHistory(func(h *history) error {
		var err error
		task, err = p.add(ctx, nt, ceiling, h)
		return err
	})
	return task, err
}

// add is Add's change, under the lock; h is the history, or nil until a
// dependency needs it.
func (p *Partition) add(ctx context.Context, nt NewTask, ceiling string, h *history) (Task, error) {
	t, err := p.beginRaw(ctx, true)
	if err != nil {
		return Task{}, err
	}
	defer t.end()
	if err := t.useHistory(h); err != nil {
		return Task{}, err
	}
	if nt.Msg != "" {
		if first := t.relayOf(nt.Channel, nt.Msg); first != nil {
			return *first, nil // the same message filed again: the first task
		}
	}
	if err := t.roomForTask(nt.Text); err != nil {
		return Task{}, err
	}
	task := Task{
		Text: nt.Text, Kind: nt.Kind, Standing: nt.Standing, State: Pending,
		CreatedAt: t.now, Ceiling: ceiling, Channel: nt.Channel, From: nt.From,
		Priority: nt.Priority, By: nt.By, Retries: nt.Retries, Msg: nt.Msg,
	}
	if nt.At != nil {
		at := nt.At.UTC()
		task.ScheduledAt = &at
	}
	if err := t.resolveDeps(&task, nt.After); err != nil {
		return Task{}, err
	}
	task.ID = t.newTaskID()
	t.addTask(task)
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

// resolveDeps resolves dependency ids (a full id, unique prefix or random
// suffix) against the live tasks and the finished ones alike: one that
// names several is exit 2, an unknown one exit 2. A full live id is taken
// without the history; any other needs it (errNeedHistory without).
func (t *txn) resolveDeps(task *Task, after []string) error {
	var all []string
	task.DependsOn = nil
	if len(after) == 0 {
		return nil
	}
	ids := t.taskIDs()
	live := make(map[string]bool, len(ids))
	for _, id := range ids {
		live[id] = true
	}
	for _, a := range after {
		id := a
		if !live[a] {
			if t.hist == nil {
				return errNeedHistory
			}
			if all == nil {
				all = append(all, ids...)
				for _, fid := range t.hist.finishedIDs() {
					if !live[fid] {
						all = append(all, fid)
					}
				}
			}
			var err error
			if id, err = home.Resolve("task", a, all); err != nil {
				if errors.Is(err, errs.ErrNotFound) {
					return usage("unknown dependency %q: no such task in worker %s", a, t.p.Name)
				}
				return err
			}
		}
		if id == task.ID {
			return usage("task %s cannot depend on itself", id)
		}
		if !contains(task.DependsOn, id) {
			task.DependsOn = append(task.DependsOn, id)
		}
		if st := t.hist.stateIfAny(id); st != "" && !live[id] {
			if task.Settled == nil {
				task.Settled = map[string]string{}
			}
			task.Settled[id] = st
		}
	}
	return nil
}

// roomForTask refuses a new task of text when tasks.json holds
// MaxOpenTasks, or when its open tasks' text and text together would be
// over MaxOpenText.
func (t *txn) roomForTask(text string) error {
	n := len(t.f.Tasks)
	if t.raw != nil {
		n = t.raw.n + len(t.raw.added)
	}
	if n >= MaxOpenTasks {
		return errs.WithHint(usage("worker %s has %d open tasks, the limit of %d per partition", t.p.Name, n, MaxOpenTasks),
			"let some finish, or cancel some, before filing more")
	}
	if b := t.openText(len(text)); b+int64(len(text)) > MaxOpenText {
		return errs.WithHint(usage("worker %s has %d bytes of open tasks' text, the limit of %d MiB per partition", t.p.Name, b, MaxOpenText>>20),
			"let some finish, or cancel some, before filing more")
	}
	return nil
}

// openText is the bytes of text of tasks.json's tasks as this change
// leaves them. Tasks kept encoded are counted by their encoding (an upper
// bound of their text), and decoded to count exactly only when that bound
// and more bytes of text would be over MaxOpenText: every change gives the
// same answer.
func (t *txn) openText(more int) int64 {
	if t.raw == nil {
		return textBytes(t.f.Tasks)
	}
	added := textBytes(t.raw.added)
	if b := int64(len(t.raw.block)) + added; b+int64(more) <= MaxOpenText {
		return b
	}
	f, err := DecodeFile(t.p.W.TasksFile(), t.raw.data)
	if err != nil {
		return int64(len(t.raw.block)) + added // read before: cannot fail; the bound then
	}
	return textBytes(f.Tasks) + added
}

// textBytes is the bytes of text of tasks.
func textBytes(tasks []Task) int64 {
	var b int64
	for i := range tasks {
		b += int64(len(tasks[i].Text))
	}
	return b
}

// addTask appends task to tasks.json's tasks.
func (t *txn) addTask(task Task) {
	if t.raw != nil {
		t.raw.added = append(t.raw.added, task)
	} else {
		t.f.Tasks = append(t.f.Tasks, task)
	}
}

// relayOf is the live relay of tasks.json filed for message msg of
// channel, nil if there is none. A finished one is not looked for here: the
// conversation record (lib/chat) says which messages were filed.
func (t *txn) relayOf(channel, msg string) *Task {
	for _, id := range t.taskIDs() {
		if tk := t.liveTask(id); tk != nil && tk.Msg == msg && tk.Channel == channel && tk.Kind == KindRelay {
			return tk
		}
	}
	return nil
}

// liveTask is task id of tasks.json as this change leaves it, nil if it
// holds none. With the tasks kept encoded it is a decoded copy: a change
// that alters the task must begin decoded.
func (t *txn) liveTask(id string) *Task {
	if t.raw != nil {
		return t.raw.task(id)
	}
	return t.f.Task(id)
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
		return t.raw.ids()
	}
	ids := make([]string, len(t.f.Tasks))
	for i := range t.f.Tasks {
		ids[i] = t.f.Tasks[i].ID
	}
	return ids
}
