package tms

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/roster-sh/roster/lib/runs"
)

// Format is the "format" number of tasks.json, schedule.json and journal
// records this build reads and writes.
const Format = 1

// Kinds of task (docs/tasks.md, "How work arrives").
const (
	KindFiled        = "filed"
	KindRecurring    = "recurring"
	KindRelay        = "relay"
	KindHeartbeat    = "heartbeat"
	KindContinuation = "continuation"
)

// Standings.
const (
	Owner     = "owner"
	Proactive = "proactive"
)

// Who made an entry or a change (`by`).
const (
	ByOwner  = "owner"
	ByWorker = "worker"
	ByHost   = "host"
)

// Task states. Pending, Claimed and NeedsReview live in tasks.json; the
// others only in the journal.
const (
	Pending     = "pending"
	Claimed     = "claimed"
	NeedsReview = "needs-review"
	Completed   = "completed"
	Failed      = "failed"
	Canceled    = "canceled"
)

// Journal events (docs/layout.md, "tasks/journal.jsonl"), plus gate-proposed for
// a gate a box asked for (the change an accepted propose action makes).
const (
	EvFiled        = "filed"
	EvFired        = "fired"
	EvSkipped      = "skipped"
	EvClaimed      = "claimed"
	EvCompleted    = "completed"
	EvFailed       = "failed"
	EvCanceled     = "canceled"
	EvRequeued     = "requeued"
	EvRetrying     = "retrying" // a failed task re-filed under its id for an automatic retry
	EvEdited       = "edited"   // a pending task changed in place (roster-task edit)
	EvReclaimed    = "reclaimed"
	EvNeedsReview  = "needs-review"
	EvGateProposed = "gate-proposed"
	EvGateResolved = "gate-resolved"
	EvSet          = "set"
	EvAction       = "action"
	EvForgotten    = "forgotten"
)

// HeartbeatID is the id of the system template kept in step with the
// worker spec's heartbeat.
const HeartbeatID = "heartbeat"

// MaxReclaims is how many times a task's box may be lost before the task
// fails with "box lost 3 times".
const MaxReclaims = 3

// Limits of one partition (docs/dispatch-and-box.md, Containment: Sizes):
// what one worker can make the host store, read and journal for it.
const (
	MaxText      = 64 << 10 // bytes of a task's or template's text (a relay's message included)
	MaxSetBytes  = 4 << 20  // bytes of one set's input, and of any one journal line
	MaxOpenTasks = 10000    // tasks in tasks.json: pending, claimed and needing review
	MaxTemplates = 256      // templates, the heartbeat included
	// MaxOpenText bounds the text of a partition's open tasks together
	// (of tasks.json's tasks as written, when the change keeps them
	// encoded): 10,000 tasks of 64 KiB made a 650 MB tasks.json, which
	// every dispatcher tick read (3.2 GB of RSS in the host's one
	// dispatcher, whatever the worker's host_memory).
	MaxOpenText = 32 << 20
)

// Task is one entry of tasks.json's "tasks", or (in a journal record) a
// task as it finished.
type Task struct {
	ID          string            `json:"id"`
	Text        string            `json:"text"`
	Kind        string            `json:"kind"`
	Standing    string            `json:"standing"`
	State       string            `json:"state"`
	CreatedAt   time.Time         `json:"created_at"`
	ScheduledAt *time.Time        `json:"scheduled_at,omitempty"`
	DependsOn   []string          `json:"depends_on,omitempty"`
	Settled     map[string]string `json:"settled,omitempty"` // finished dependencies: id -> completed|failed|canceled
	Ceiling     string            `json:"ceiling,omitempty"`
	Channel     string            `json:"channel,omitempty"`
	From        string            `json:"from,omitempty"` // a relay's sender
	Msg         string            `json:"msg,omitempty"`  // a relay's network message id
	Template    string            `json:"template,omitempty"`
	Slot        *time.Time        `json:"slot,omitempty"`
	Priority    int               `json:"priority"`
	By          string            `json:"by"`
	Attempts    int               `json:"attempts"`
	Retries     int               `json:"retries,omitempty"` // automatic retries of a failed run allowed (--retries)
	Retried     int               `json:"retried,omitempty"` // of which used so far
	Claim       *Claim            `json:"claim,omitempty"`
	Gates       []Gate            `json:"gates,omitempty"`
	Continues   string            `json:"continues,omitempty"`    // a continuation's original task
	RefiledFrom string            `json:"refiled_from,omitempty"` // a requeued finished task's old id
	FiledBy     string            `json:"filed_by,omitempty"`     // the run whose action filed it
	LastRun     string            `json:"last_run,omitempty"`     // the run that ended in needs-review, or finished it
	FinishedAt  *time.Time        `json:"finished_at,omitempty"`  // journal records only
}

// Claim names the run a dispatcher claimed a task for.
type Claim struct {
	Run string    `json:"run"`
	At  time.Time `json:"at"`
}

// Gate is an operator decision a box asked for.
type Gate struct {
	ID         string     `json:"id"`
	What       string     `json:"what"`
	State      string     `json:"state"` // pending | approved | denied
	Wake       bool       `json:"wake,omitempty"`
	Why        string     `json:"why,omitempty"`
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
	// Kind is "" for a worker's proposal, GateRepoPush for a push to a
	// host repo's protected ref held for review (Push says which).
	Kind string    `json:"kind,omitempty"`
	Push *RepoPush `json:"push,omitempty"`
}

// GateRepoPush is the kind of a gate the gateway's git route opened.
const GateRepoPush = "repo_push"

// RepoPush is what a repo_push gate holds: the ref to move, from Old to
// New (fast-forward only), and where the commits wait meanwhile.
type RepoPush struct {
	Repo    string `json:"repo"`    // the worker's [[repo]] name
	Ref     string `json:"ref"`     // refs/heads/...
	Old     string `json:"old"`     // the ref's value when pushed (all zeros: it did not exist)
	New     string `json:"new"`     // the pushed commit
	Pending string `json:"pending"` // refs/roster/pending/... in the host repo
}

// Gate states.
const (
	GatePending  = "pending"
	GateApproved = "approved"
	GateDenied   = "denied"
)

// Template spawns ordinary pending tasks on a cron schedule.
type Template struct {
	ID       string     `json:"id"`
	System   bool       `json:"system,omitempty"`
	Cron     string     `json:"cron"`
	Text     string     `json:"text"`
	Standing string     `json:"standing"`
	By       string     `json:"by"`
	Window   string     `json:"window"`
	CatchUp  string     `json:"catch_up"`
	Overlap  string     `json:"overlap"`
	Ceiling  string     `json:"ceiling"`
	Priority int        `json:"priority,omitempty"`
	Retries  int        `json:"retries,omitempty"` // the tasks it files get --retries
	Channel  string     `json:"channel,omitempty"`
	Cursor   *time.Time `json:"cursor,omitempty"`
	// Disabled: it fires nothing (template disable); enabling moves its
	// cursor to that moment, so nothing missed meanwhile fires.
	Disabled bool `json:"disabled,omitempty"`
	// Last is the task it filed last and how that ended (host-kept).
	Last *TemplateLast `json:"last,omitempty"`
}

// TemplateLast is a template's last filed task: when it fired, the task,
// its state (pending, claimed, or how it finished) and the run that
// finished it.
type TemplateLast struct {
	Task  string    `json:"task"`
	At    time.Time `json:"at"`
	State string    `json:"state"`
	Run   string    `json:"run,omitempty"`
}

// File is tasks/tasks.json: the partition's pending work and templates.
type File struct {
	Format    int        `json:"format"`
	Version   int64      `json:"version"`
	Tasks     []Task     `json:"tasks"`
	Templates []Template `json:"templates"`
}

// Schedule is view/schedule.json: File plus the worker and the time it was
// written. A box reads it (and its version) at $HOME/self/schedule.json.
type Schedule struct {
	Format    int        `json:"format"`
	Version   int64      `json:"version"`
	Worker    string     `json:"worker"`
	Now       time.Time  `json:"now"`
	Tasks     []Task     `json:"tasks"`
	Templates []Template `json:"templates"`
}

// Record is one entry of a journal line's "records": a task or a template
// as the change left it. Removed marks an entry that left tasks.json
// (finished, canceled, retired). On the wire it is the entry's own object
// plus "entry": "task"|"template" and "removed": true.
type Record struct {
	Removed  bool
	Task     *Task
	Template *Template
}

// MarshalJSON writes the entry's object with "entry" (and "removed") first.
func (r Record) MarshalJSON() ([]byte, error) {
	var kind string
	var body []byte
	var err error
	switch {
	case r.Task != nil:
		kind = "task"
		body, err = json.Marshal(r.Task)
	case r.Template != nil:
		kind = "template"
		body, err = json.Marshal(r.Template)
	default:
		return nil, fmt.Errorf("journal record with neither task nor template")
	}
	if err != nil {
		return nil, err
	}
	head := `{"entry":"` + kind + `",`
	if r.Removed {
		head += `"removed":true,`
	}
	if len(body) < 2 || body[0] != '{' {
		return nil, fmt.Errorf("journal record: unexpected encoding")
	}
	if bytes.Equal(body, []byte("{}")) {
		return []byte(head[:len(head)-1] + "}"), nil
	}
	return append([]byte(head), body[1:]...), nil
}

// UnmarshalJSON reads a record written by MarshalJSON.
func (r *Record) UnmarshalJSON(data []byte) error {
	var head struct {
		Entry   string `json:"entry"`
		Removed bool   `json:"removed"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return err
	}
	*r = Record{Removed: head.Removed}
	switch head.Entry {
	case "task":
		r.Task = new(Task)
		if err := json.Unmarshal(data, r.Task); err != nil {
			return err
		}
		if r.Task.ID == "" {
			return fmt.Errorf("task record without an id")
		}
	case "template":
		r.Template = new(Template)
		if err := json.Unmarshal(data, r.Template); err != nil {
			return err
		}
		if r.Template.ID == "" {
			return fmt.Errorf("template record without an id")
		}
	default:
		return fmt.Errorf("record of unknown entry %q", head.Entry)
	}
	return nil
}

// Line is one journal line. Version is 0 (omitted) on a line that changes
// nothing: a refused action, an informational skip.
type Line struct {
	Seq      int64          `json:"seq"`
	Version  int64          `json:"version,omitempty"`
	At       time.Time      `json:"at"`
	Event    string         `json:"event"`
	Task     string         `json:"task,omitempty"`
	Template string         `json:"template,omitempty"`
	Run      string         `json:"run,omitempty"`
	By       string         `json:"by"`
	Slot     *time.Time     `json:"slot,omitempty"`
	Missed   int            `json:"missed,omitempty"`
	Reason   string         `json:"reason,omitempty"`
	Gate     string         `json:"gate,omitempty"`
	Decision string         `json:"decision,omitempty"`
	From     string         `json:"from,omitempty"` // requeue: the finished task filed again
	Action   *ActionLog     `json:"action,omitempty"`
	Evidence *runs.Evidence `json:"evidence,omitempty"`
	Changed  []Change       `json:"changed,omitempty"`
	Records  []Record       `json:"records,omitempty"`
	Channel  string         `json:"channel,omitempty"` // forgotten: the channel, percent-encoded
	Forgot   *ForgetCounts  `json:"forgot,omitempty"`  // forgotten: what went
	Push     []runs.GitRef  `json:"push,omitempty"`    // a push action: its refs and outcomes
}

// ActionLog is what an `action` line says about an action from a box.
type ActionLog struct {
	N       int       `json:"n"`
	Kind    string    `json:"kind"`
	Outcome string    `json:"outcome"` // "ok" or "refused: ..."
	Refused []Refusal `json:"refused,omitempty"`
}

// Change is one entry a set touched and how.
type Change struct {
	Entry string `json:"entry"` // task or template id
	What  string `json:"what"`  // created, changed, canceled, retired
}

// Refusal is one refused entry of a set_tasks (or another refused change),
// with its reason.
type Refusal struct {
	Entry  string `json:"entry"`
	Reason string `json:"reason"`
}
