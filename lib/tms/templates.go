package tms

import (
	"context"
	"fmt"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/tms/sched"
)

// Overlap values of a template.
const (
	OverlapForbid = "forbid"
	OverlapAllow  = "allow"
)

// HeartbeatText is the system heartbeat's task text.
const HeartbeatText = "Curate your task list and do what is due."

// NewTemplate is what AddTemplate creates.
type NewTemplate struct {
	ID       string
	Cron     string
	Text     string
	Standing string // default proactive
	Window   string
	CatchUp  string // latest (default) | none
	Overlap  string // forbid (default) | allow
	Ceiling  string
	Priority int
	Retries  int // the tasks it files get these automatic retries
	Channel  string
	By       string // default owner
}

// normalizeTemplate checks a template's fields and fills in defaults; it
// returns the parsed schedule.
func normalizeTemplate(t *Template) (*sched.Schedule, error) {
	if err := home.ValidTemplate(t.ID); err != nil {
		return nil, err
	}
	s, err := parseFiring(t.Cron, time.UTC) // whether it ever fires; the zone hardly matters
	if err != nil {
		return nil, err
	}
	if err := checkText(t.Text); err != nil {
		return nil, err
	}
	if t.Standing == "" {
		t.Standing = Proactive
	}
	if !validStanding(t.Standing) {
		return nil, usage("standing %q: must be owner or proactive", t.Standing)
	}
	if w, err := sched.ParseWindow(t.Window); err != nil {
		return nil, usage("window: %v", err)
	} else if t.Window != "" && w == 0 {
		return nil, usage("window %q: must be more than 0 (\"\" means no bound)", t.Window)
	}
	if t.CatchUp, err = sched.ParseCatchUp(t.CatchUp); err != nil {
		return nil, usage("catch_up: %v", err)
	}
	switch t.Overlap {
	case "":
		t.Overlap = OverlapForbid
	case OverlapForbid, OverlapAllow:
	default:
		return nil, usage("overlap %q: must be forbid or allow", t.Overlap)
	}
	if t.Ceiling, err = checkDuration("ceiling", t.Ceiling); err != nil {
		return nil, err
	}
	if err := checkRetries(t.Retries); err != nil {
		return nil, err
	}
	if t.Channel != "" {
		if _, err := home.EncodeChannel(t.Channel); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// AddTemplate saves a new template. Its cursor is its creation time, so
// its first activation is the first one after it was made. The id
// "heartbeat" is the system template's (exit 2); an existing id is exit 13.
func (p *Partition) AddTemplate(ctx context.Context, nt NewTemplate) (Template, error) {
	if nt.By == "" {
		nt.By = ByOwner
	}
	tpl := Template{ID: nt.ID, Cron: nt.Cron, Text: nt.Text, Standing: nt.Standing, By: nt.By,
		Window: nt.Window, CatchUp: nt.CatchUp, Overlap: nt.Overlap, Ceiling: nt.Ceiling,
		Priority: nt.Priority, Retries: nt.Retries, Channel: nt.Channel}
	if nt.ID == HeartbeatID {
		return Template{}, errs.WithHint(usage("template %q is the system template", nt.ID),
			"set the worker spec's heartbeat instead")
	}
	if _, err := normalizeTemplate(&tpl); err != nil {
		return Template{}, err
	}
	t, err := p.begin(ctx)
	if err != nil {
		return Template{}, err
	}
	defer t.end()
	if t.f.Template(tpl.ID) != nil {
		return Template{}, conflict("template %s already exists in worker %s", tpl.ID, p.Name)
	}
	if n := len(t.f.Templates); n >= MaxTemplates {
		return Template{}, usage("worker %s has %d templates, the limit of %d per partition", p.Name, n, MaxTemplates)
	}
	c := t.now.Truncate(time.Second)
	tpl.Cursor = &c
	t.f.Templates = append(t.f.Templates, tpl)
	if _, err := t.emit(Line{Event: EvSet, Template: tpl.ID, By: nt.By, Reason: "template added",
		Changed: []Change{{tpl.ID, "created"}}, Records: []Record{templateRec(tpl, false)}}, true); err != nil {
		return Template{}, err
	}
	return tpl, t.commit()
}

// RemoveTemplate retires a template (exit 12 if there is none; the
// heartbeat is the worker spec's to remove, exit 13).
func (p *Partition) RemoveTemplate(ctx context.Context, id, by string) error {
	if by == "" {
		by = ByOwner
	}
	if id == HeartbeatID {
		// The heartbeat is the spec's whether or not the partition holds it yet.
		return conflict("heartbeat is the system template: set heartbeat = \"off\" in %s", p.specName())
	}
	t, err := p.begin(ctx)
	if err != nil {
		return err
	}
	defer t.end()
	i := t.f.templateIndex(id)
	if i < 0 {
		return notFound("template %s: not found in worker %s", id, p.Name)
	}
	tpl := t.f.Templates[i]
	if tpl.System {
		return conflict("template %s is a system template: the host keeps it from %s", id, p.specName())
	}
	t.f.Templates = append(t.f.Templates[:i], t.f.Templates[i+1:]...)
	if _, err := t.emit(Line{Event: EvSet, Template: id, By: by, Reason: "template removed",
		Changed: []Change{{id, "retired"}}, Records: []Record{templateRec(tpl, true)}}, true); err != nil {
		return err
	}
	return t.commit()
}

// FireReport is what one FireTemplates did.
type FireReport struct {
	Fired   []string // ids of the tasks fired
	Skipped int      // skipped lines journaled
	Errors  []string // templates whose spec no longer parses (left alone)
}

// FireTemplates keeps the heartbeat in step with the worker spec, then,
// under one hold of the lock, fires every template activation that is due
// (sched.Plan), applying the overlap rule. Each firing is one journal line
// and one version carrying the new task and the advanced cursor; skips are
// journaled `skipped` with their reason (window, overlap, catch-up with
// missed N).
func (p *Partition) FireTemplates(ctx context.Context) (*FireReport, error) {
	// First a dry run on a snapshot, with no lock: the dispatcher calls
	// this for every changed worker on every tick, and most of the time
	// nothing is due, so a busy partition is not waited for only to learn
	// that (Containment: one worker's partition never delays another's
	// claims). Anything to write is done again under the lock. Whether
	// there is anything depends on the templates alone (a template whose
	// cursor moves always journals a line), so the tasks are not decoded.
	if f, seq, ver, _, ok := p.snapshotOf(true); ok {
		dry := &txn{p: p, f: f, seq: seq, ver: ver, now: p.clock.Now().UTC()}
		rep := &FireReport{}
		err := dry.syncHeartbeat()
		for i := 0; err == nil && i < len(dry.f.Templates); i++ {
			err = dry.fire(i, rep)
		}
		if err == nil && len(dry.out) == 0 {
			return rep, nil
		}
	}
	t, err := p.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer t.end()
	rep := &FireReport{}
	if err := t.syncHeartbeat(); err != nil {
		return nil, err
	}
	for i := range t.f.Templates {
		if err := t.fire(i, rep); err != nil {
			return nil, err
		}
	}
	return rep, t.commit()
}

// SyncHeartbeat only keeps the heartbeat template in step with the spec.
func (p *Partition) SyncHeartbeat(ctx context.Context) error {
	t, err := p.begin(ctx)
	if err != nil {
		return err
	}
	defer t.end()
	if err := t.syncHeartbeat(); err != nil {
		return err
	}
	return t.commit()
}

// specName is the worker spec's path as the operator knows it,
// workers/NAME.toml.
func (p *Partition) specName() string { return "workers/" + p.Name + ".toml" }

// syncSpec keeps the heartbeat in step with the worker spec at the end of
// a change (nothing is journaled when it already is): every writer of the
// partition does it, so the heartbeat never waits for a dispatcher.
func (t *txn) syncSpec() error {
	if !t.changed || t.p.Spec == nil {
		return nil
	}
	return t.syncHeartbeat()
}

// HeartbeatCron is the heartbeat template's spec for a period.
func HeartbeatCron(d time.Duration) string { return "@every " + config.FormatDuration(d) }

func (t *txn) syncHeartbeat() error {
	var d time.Duration
	if t.p.Spec != nil {
		d = t.p.Spec.Heartbeat
	}
	i := t.f.templateIndex(HeartbeatID)
	if d <= 0 {
		if i < 0 {
			return nil
		}
		old := t.f.Templates[i]
		t.f.Templates = append(t.f.Templates[:i], t.f.Templates[i+1:]...)
		_, err := t.emit(Line{Event: EvSet, Template: HeartbeatID, By: ByHost, Reason: "heartbeat off in the worker spec",
			Changed: []Change{{HeartbeatID, "retired"}}, Records: []Record{templateRec(old, true)}}, true)
		return err
	}
	want := Template{ID: HeartbeatID, System: true, Cron: HeartbeatCron(d), Text: HeartbeatText,
		Standing: Proactive, By: ByHost, CatchUp: sched.CatchUpLatest, Overlap: OverlapForbid}
	what := "created"
	if i >= 0 {
		cur := t.f.Templates[i]
		want.Cursor, want.Last = cur.Cursor, cur.Last
		if cur.Cron == want.Cron && cur.System && cur.Text == want.Text && cur.Standing == want.Standing &&
			cur.By == want.By && cur.CatchUp == want.CatchUp && cur.Overlap == want.Overlap &&
			cur.Window == "" && cur.Ceiling == "" && cur.Priority == 0 && cur.Channel == "" {
			return nil
		}
		what = "changed"
		t.f.Templates[i] = want
	} else {
		c := t.now.Truncate(time.Second)
		want.Cursor = &c
		t.f.Templates = append(t.f.Templates, want)
	}
	_, err := t.emit(Line{Event: EvSet, Template: HeartbeatID, By: ByHost, Reason: "heartbeat " + config.FormatDuration(d) + " in the worker spec",
		Changed: []Change{{HeartbeatID, what}}, Records: []Record{templateRec(want, false)}}, true)
	return err
}

// liveFromTemplate reports whether a task of template id is pending or
// claimed (the overlap rule).
func (f *File) liveFromTemplate(id string) bool {
	for i := range f.Tasks {
		if f.Tasks[i].Template == id && (f.Tasks[i].State == Pending || f.Tasks[i].State == Claimed) {
			return true
		}
	}
	return false
}

func (t *txn) fire(i int, rep *FireReport) error {
	tpl := &t.f.Templates[i]
	if tpl.Disabled {
		return nil // its cursor is moved on when it is enabled again
	}
	s, err := sched.Parse(tpl.Cron, t.p.Zone())
	if err != nil {
		rep.Errors = append(rep.Errors, fmt.Sprintf("template %s: %v", tpl.ID, err))
		return nil
	}
	window, _ := sched.ParseWindow(tpl.Window)
	var cursor time.Time
	if tpl.Cursor != nil {
		cursor = *tpl.Cursor
	}
	d := sched.Plan(s, cursor, t.now, window, tpl.CatchUp)
	if !d.NewCursor.After(cursor) {
		return nil // nothing new (or the clock moved back): nothing to do
	}
	nc := d.NewCursor.UTC()
	tpl.Cursor = &nc
	fire := d.Fire
	overlap := false
	if fire != nil && tpl.Overlap != OverlapAllow && t.f.liveFromTemplate(tpl.ID) {
		overlap = true
		fire = nil
	}
	if fire != nil && t.f.Task(home.FiredTaskID(*fire, t.p.Name, tpl.ID)) != nil {
		fire = nil // already made (cannot happen with a forward cursor; never twice)
	}
	full := ""
	if fire != nil && len(t.f.Tasks) >= MaxOpenTasks {
		full = fmt.Sprintf("%d open tasks, the partition's limit", MaxOpenTasks)
	} else if fire != nil && textBytes(t.f.Tasks)+int64(len(tpl.Text)) > MaxOpenText {
		full = fmt.Sprintf("%d MiB of open tasks' text, the partition's limit", MaxOpenText>>20)
	}
	if full != "" {
		fire = nil // skipped, as an overlap is: the partition is at its limit
	}
	type skip struct {
		at     time.Time
		reason string
		missed int
	}
	var skips []skip
	for _, sk := range d.Skipped {
		sk := sk
		missed := 0
		if sk.Reason == sched.SkipCatchUp {
			missed = d.Missed
		}
		skips = append(skips, skip{sk.At, sk.Reason, missed})
	}
	if overlap {
		skips = append(skips, skip{*d.Fire, "overlap", 0})
	}
	if full != "" {
		skips = append(skips, skip{*d.Fire, full, 0})
	}
	for k, sk := range skips {
		at := sk.at.UTC()
		last := k == len(skips)-1 && fire == nil
		l := Line{Event: EvSkipped, Template: tpl.ID, By: ByHost, Slot: &at, Reason: sk.reason, Missed: sk.missed}
		if last {
			l.Records = []Record{templateRec(*tpl, false)}
		}
		if _, err := t.emit(l, last); err != nil {
			return err
		}
		rep.Skipped++
	}
	if fire == nil {
		if len(skips) == 0 { // the cursor moved with nothing to say (a zero cursor initialized)
			_, err := t.emit(Line{Event: EvSkipped, Template: tpl.ID, By: ByHost, Reason: "cursor initialized",
				Records: []Record{templateRec(*tpl, false)}}, true)
			return err
		}
		return nil
	}
	act := fire.UTC()
	task := t.fileFrom(tpl, act)
	if _, err := t.emit(Line{Event: EvFired, Task: task.ID, Template: tpl.ID, By: ByHost, Slot: &act, Missed: d.Missed,
		Records: []Record{taskRec(task, false), templateRec(*tpl, false)}}, true); err != nil {
		return err
	}
	rep.Fired = append(rep.Fired, task.ID)
	return nil
}

// fileFrom files tpl's task for activation act and notes it as the
// template's last.
func (t *txn) fileFrom(tpl *Template, act time.Time) Task {
	kind := KindRecurring
	if tpl.System && tpl.ID == HeartbeatID {
		kind = KindHeartbeat
	}
	task := Task{ID: home.FiredTaskID(act, t.p.Name, tpl.ID), Text: tpl.Text, Kind: kind, Standing: tpl.Standing,
		State: Pending, CreatedAt: t.now, Ceiling: tpl.Ceiling, Channel: tpl.Channel, Template: tpl.ID,
		Slot: &act, Priority: tpl.Priority, Retries: tpl.Retries, By: ByHost}
	t.f.Tasks = append(t.f.Tasks, task)
	tpl.Last = &TemplateLast{Task: task.ID, At: act, State: Pending}
	return task
}

// EnableTemplate enables (on) or disables a template (`template enable`,
// `template disable`). A disabled template fires nothing; enabling moves
// its cursor to now, so the activations it missed meanwhile never fire (no
// catch-up burst, as a stopped systemd timer). Already so: unchanged, nil.
// The heartbeat is the spec's (exit 13).
func (p *Partition) EnableTemplate(ctx context.Context, id string, on bool, by string) (changed bool, err error) {
	if by == "" {
		by = ByOwner
	}
	if id == HeartbeatID {
		return false, errs.WithHint(conflict("heartbeat is the system template"),
			fmt.Sprintf("set heartbeat = \"off\" in %s to stop it", p.specName()))
	}
	t, err := p.begin(ctx)
	if err != nil {
		return false, err
	}
	defer t.end()
	i := t.f.templateIndex(id)
	if i < 0 {
		return false, notFound("template %s: not found in worker %s", id, p.Name)
	}
	tpl := &t.f.Templates[i]
	if tpl.Disabled == !on {
		return false, nil
	}
	tpl.Disabled = !on
	what := "disabled"
	if on {
		what = "enabled"
		c := t.now.Truncate(time.Second).UTC()
		tpl.Cursor = &c
	}
	if _, err := t.emit(Line{Event: EvSet, Template: id, By: by, Reason: "template " + what,
		Changed: []Change{{id, what}}, Records: []Record{templateRec(*tpl, false)}}, true); err != nil {
		return false, err
	}
	return true, t.commit()
}

// RunTemplate files one activation of a template now, outside its
// schedule (`template run`, as `systemctl start` on a timer's unit): a
// task like the ones it fires, its slot this second, journaled `fired`
// with the reason "run by hand"; its cursor does not move. A disabled
// template runs too. Its overlap rule holds (forbid: a live task of it is
// exit 13), and so does the partition's size limit.
func (p *Partition) RunTemplate(ctx context.Context, id, by string) (Task, error) {
	if by == "" {
		by = ByOwner
	}
	t, err := p.begin(ctx)
	if err != nil {
		return Task{}, err
	}
	defer t.end()
	i := t.f.templateIndex(id)
	if i < 0 {
		return Task{}, notFound("template %s: not found in worker %s", id, p.Name)
	}
	tpl := &t.f.Templates[i]
	if tpl.Overlap != OverlapAllow && t.f.liveFromTemplate(id) {
		return Task{}, errs.WithHint(conflict("template %s: a task of it is pending or claimed (overlap forbid)", id),
			"wait for it, or cancel it")
	}
	if err := t.roomForTask(tpl.Text); err != nil {
		return Task{}, err
	}
	act := t.now.Truncate(time.Second).UTC()
	if t.f.Task(home.FiredTaskID(act, p.Name, id)) != nil {
		return Task{}, conflict("template %s: already run this second", id)
	}
	task := t.fileFrom(tpl, act)
	if _, err := t.emit(Line{Event: EvFired, Task: task.ID, Template: id, By: by, Slot: &act, Reason: "run by hand",
		Records: []Record{taskRec(task, false), templateRec(*tpl, false)}}, true); err != nil {
		return Task{}, err
	}
	return task, t.commit()
}

// nextActivation is the earliest activation of any template after now.
func (p *Partition) nextActivation(f *File, now time.Time) time.Time {
	var next time.Time
	for _, tpl := range f.Templates {
		if tpl.Disabled {
			continue
		}
		s, err := sched.Parse(tpl.Cron, p.Zone())
		if err != nil {
			continue
		}
		after := now
		if tpl.Cursor != nil && tpl.Cursor.After(after) {
			after = *tpl.Cursor
		}
		n := s.Next(after)
		if !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	return next
}

// PreviewTemplate returns the next n activations of a spec after `after`
// under roster's time rules, read in zone (the host zone, Partition.Zone,
// unless the spec names one), marked with the daylight-saving cases: the
// same computation the firing uses (`roster-task template next`).
func PreviewTemplate(spec string, after time.Time, n int, zone *time.Location) ([]sched.Activation, *sched.Schedule, error) {
	s, err := parseFiring(spec, zone)
	if err != nil {
		return nil, nil, err
	}
	return sched.Preview(s, after, n), s, nil
}

// neverFiresFrom is where parseFiring looks for a first activation: a fixed
// instant, so the check does not depend on the clock.
var neverFiresFrom = time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)

// parseFiring parses a template's spec in zone and refuses (exit 2) one
// that never fires: no activation over sched's horizon (ten years), e.g.
// "0 0 30 2 *".
func parseFiring(spec string, zone *time.Location) (*sched.Schedule, error) {
	s, err := sched.Parse(spec, zone)
	if err != nil {
		return nil, err
	}
	if s.Next(neverFiresFrom).IsZero() {
		return nil, usage("cron %q never fires (no activation in ten years)", spec)
	}
	return s, nil
}
