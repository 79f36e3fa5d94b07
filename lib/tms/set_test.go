package tms

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/outbox"
)

// schedule returns the partition as a set request made from its current
// version (what a box reads in schedule.json).
func schedule(t *testing.T, p *Partition) *SetInput {
	t.Helper()
	f := mustRead(t, p)
	if f.Tasks == nil {
		f.Tasks = []Task{}
	}
	if f.Templates == nil {
		f.Templates = []Template{}
	}
	data, _ := json.Marshal(f)
	in, err := DecodeSet(data)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func set(t *testing.T, p *Partition, in *SetInput) (*SetResult, error) {
	t.Helper()
	return p.SetTasks(ctx, in, ByWorker)
}

func refusals(t *testing.T, err error) []Refusal {
	t.Helper()
	var re *RefusedError
	if !errors.As(err, &re) || !errors.Is(err, errs.ErrConflict) {
		t.Fatalf("want a refused set (exit 13), got %v", err)
	}
	return re.Refusals
}

// heartbeatPartition has the heartbeat template, a worker-filed pending
// task, an owner-filed pending task and a claimed task.
func heartbeatPartition(t *testing.T) (*Partition, *fakeClock, Task, Task, Task) {
	h := newHome(t, "dobby")
	c := &fakeClock{t: t0}
	p, err := Open(h, "dobby", Options{Clock: c, Org: defaultOrg(t), Worker: &config.Worker{Name: "dobby", Heartbeat: 30 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SyncHeartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	mine := mustAdd(t, p, NewTask{Text: "mine", By: ByWorker})
	owners := mustAdd(t, p, NewTask{Text: "owner's"})
	busy := mustAdd(t, p, NewTask{Text: "busy"})
	claim(t, p, busy.ID)
	return p, c, mine, owners, busy
}

func TestSetStaleVersionConflictsAndChangesNothing(t *testing.T) {
	p, _, _, _, _ := heartbeatPartition(t)
	in := schedule(t, p)
	before, _ := os.ReadFile(p.W.TasksFile())
	old := *in.Version - 1
	in.Version = &old
	in.Tasks = nil
	_, err := set(t, p, in)
	if !errors.Is(err, errs.ErrConflict) || !strings.Contains(err.Error(), "stale version") {
		t.Fatalf("err = %v", err)
	}
	after, _ := os.ReadFile(p.W.TasksFile())
	if !bytes.Equal(before, after) {
		t.Fatal("tasks.json changed")
	}
}

func TestSetReordersReschedulesAndChains(t *testing.T) {
	p, _, mine, owners, _ := heartbeatPartition(t)
	in := schedule(t, p)
	at := t0.Add(2 * time.Hour)
	for i := range in.Tasks {
		switch in.Tasks[i].ID {
		case mine.ID:
			in.Tasks[i].Priority = 7
			in.Tasks[i].ScheduledAt = &at
		case owners.ID:
			in.Tasks[i].DependsOn = []string{mine.ID}
		}
	}
	res, err := set(t, p, in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != *in.Version+1 || len(res.Changed) != 2 {
		t.Fatalf("result = %+v", res)
	}
	m, _ := p.Get(ctx, mine.ID)
	o, _ := p.Get(ctx, owners.ID)
	if m.Priority != 7 || !m.ScheduledAt.Equal(at) || len(o.DependsOn) != 1 {
		t.Fatalf("mine %+v owner's %+v", m, o)
	}
	j := mustJournal(t, p)
	if l := j[len(j)-1]; l.Event != EvSet || l.Version != res.Version || len(l.Records) != 2 {
		t.Fatalf("line = %+v", l)
	}
	mustClean(t, p)
}

func TestSetOmittingPendingTaskCancelsIt(t *testing.T) {
	p, _, mine, owners, busy := heartbeatPartition(t)
	in := schedule(t, p)
	in.Tasks = nil // omit everything, heartbeat too
	in.Templates = nil
	if _, err := set(t, p, in); err != nil {
		t.Fatal(err)
	}
	f := mustRead(t, p)
	if f.Task(mine.ID) != nil || f.Task(owners.ID) != nil {
		t.Fatal("omitted pending tasks not canceled")
	}
	if f.Task(busy.ID) == nil || f.Template(HeartbeatID) == nil {
		t.Fatal("omission removed the claimed task or the heartbeat")
	}
	if st, _ := p.Show(ctx, mine.ID); st.State != Canceled {
		t.Fatalf("canceled = %+v", st)
	}
	mustClean(t, p)
}

func TestSetCreatesTasksAndTemplates(t *testing.T) {
	p, _, _, _, _ := heartbeatPartition(t)
	in := schedule(t, p)
	in.Tasks = append(in.Tasks, Task{Text: "new one", Priority: 3})
	in.Templates = append(in.Templates, Template{ID: "nightly", Cron: "0 2 * * *", Text: "tidy"})
	if _, err := set(t, p, in); err != nil {
		t.Fatal(err)
	}
	f := mustRead(t, p)
	var n *Task
	for i := range f.Tasks {
		if f.Tasks[i].Text == "new one" {
			n = &f.Tasks[i]
		}
	}
	if n == nil || n.By != ByWorker || n.Standing != Proactive || n.Kind != KindFiled || n.Priority != 3 {
		t.Fatalf("created = %+v", n)
	}
	tpl := f.Template("nightly")
	if tpl == nil || tpl.By != ByWorker || tpl.Cursor == nil || tpl.Overlap != OverlapForbid {
		t.Fatalf("template = %+v", tpl)
	}
}

func TestSetChangesAndRetiresTemplates(t *testing.T) {
	p, _, _, _, _ := heartbeatPartition(t)
	p.AddTemplate(ctx, NewTemplate{ID: "a", Cron: "@hourly", Text: "a"})
	p.AddTemplate(ctx, NewTemplate{ID: "b", Cron: "@hourly", Text: "b"})
	in := schedule(t, p)
	var tpls []Template
	for _, tp := range in.Templates {
		if tp.ID == "a" {
			tp.Cron = "@daily"
		}
		if tp.ID != "b" {
			tpls = append(tpls, tp)
		}
	}
	in.Templates = tpls
	if _, err := set(t, p, in); err != nil {
		t.Fatal(err)
	}
	f := mustRead(t, p)
	if f.Template("a").Cron != "@daily" || f.Template("b") != nil {
		t.Fatalf("templates = %+v", f.Templates)
	}
}

func TestSetEditsTextOfTaskItFiled(t *testing.T) {
	p, _, mine, _, _ := heartbeatPartition(t)
	in := schedule(t, p)
	for i := range in.Tasks {
		if in.Tasks[i].ID == mine.ID {
			in.Tasks[i].Text = "mine, reworded"
		}
	}
	if _, err := set(t, p, in); err != nil {
		t.Fatal(err)
	}
	if m, _ := p.Get(ctx, mine.ID); m.Text != "mine, reworded" {
		t.Fatalf("text = %q", m.Text)
	}
}

func TestSetRefusesEditingTextItDidNotFile(t *testing.T) {
	p, _, _, owners, _ := heartbeatPartition(t)
	in := schedule(t, p)
	for i := range in.Tasks {
		if in.Tasks[i].ID == owners.ID {
			in.Tasks[i].Text = "hijacked"
		}
	}
	r := refusals(t, mustFail(set(t, p, in)))
	if len(r) != 1 || r[0].Entry != owners.ID || !strings.Contains(r[0].Reason, "did not file") {
		t.Fatalf("refusals = %+v", r)
	}
}

func mustFail(_ *SetResult, err error) error { return err }

func TestSetRefusesTouchingHeartbeat(t *testing.T) {
	p, _, _, _, _ := heartbeatPartition(t)
	in := schedule(t, p)
	for i := range in.Templates {
		if in.Templates[i].ID == HeartbeatID {
			in.Templates[i].Cron = "@every 1m"
		}
	}
	r := refusals(t, mustFail(set(t, p, in)))
	if r[0].Entry != "template heartbeat" || !strings.Contains(r[0].Reason, "heartbeat") {
		t.Fatalf("refusals = %+v", r)
	}
	in = schedule(t, p)
	in.Templates = []Template{{ID: "x", System: true, Cron: "@hourly", Text: "x"}}
	if r := refusals(t, mustFail(set(t, p, in))); !strings.Contains(r[0].Reason, "system") {
		t.Fatalf("refusals = %+v", r)
	}
}

func TestSetRefusesTouchingClaimedTask(t *testing.T) {
	p, _, _, _, busy := heartbeatPartition(t)
	in := schedule(t, p)
	for i := range in.Tasks {
		if in.Tasks[i].ID == busy.ID {
			in.Tasks[i].Priority = 9
		}
	}
	r := refusals(t, mustFail(set(t, p, in)))
	if r[0].Entry != busy.ID || !strings.Contains(r[0].Reason, "claimed") {
		t.Fatalf("refusals = %+v", r)
	}
}

func TestSetRefusesTouchingNeedsReviewTask(t *testing.T) {
	p, _, _, _, busy := heartbeatPartition(t)
	task, _ := p.Get(ctx, busy.ID)
	p.ApplyAction(ctx, task.Claim.Run, busy.ID, Action{N: 1, Kind: outbox.KindPropose, Text: "x"})
	p.Attest(ctx, busy.ID, task.Claim.Run, good)
	in := schedule(t, p)
	for i := range in.Tasks {
		if in.Tasks[i].ID == busy.ID {
			in.Tasks[i].ScheduledAt = &t0
		}
	}
	r := refusals(t, mustFail(set(t, p, in)))
	if r[0].Entry != busy.ID || !strings.Contains(r[0].Reason, "needs-review") {
		t.Fatalf("refusals = %+v", r)
	}
}

func TestSetRefusesRaisingStanding(t *testing.T) {
	p, _, mine, _, _ := heartbeatPartition(t)
	p.AddTemplate(ctx, NewTemplate{ID: "a", Cron: "@hourly", Text: "a"})
	in := schedule(t, p)
	for i := range in.Tasks {
		if in.Tasks[i].ID == mine.ID {
			in.Tasks[i].Standing = Owner
		}
	}
	for i := range in.Templates {
		if in.Templates[i].ID == "a" {
			in.Templates[i].Standing = Owner
		}
	}
	r := refusals(t, mustFail(set(t, p, in)))
	if len(r) != 2 || !strings.Contains(r[0].Reason, "raising standing") || !strings.Contains(r[1].Reason, "raising standing") {
		t.Fatalf("refusals = %+v", r)
	}
}

func TestSetRefusesCreatingOwnerEntries(t *testing.T) {
	p, _, _, _, _ := heartbeatPartition(t)
	in := schedule(t, p)
	in.Tasks = append(in.Tasks, Task{Text: "sneaky", Standing: Owner})
	in.Templates = append(in.Templates, Template{ID: "sneaky", Cron: "@hourly", Text: "x", Standing: Owner})
	r := refusals(t, mustFail(set(t, p, in)))
	if len(r) != 2 || !strings.Contains(r[0].Reason, "owner entries") || !strings.Contains(r[1].Reason, "owner entries") {
		t.Fatalf("refusals = %+v", r)
	}
}

func TestSetRefusesDependencyCycle(t *testing.T) {
	p, _, mine, owners, _ := heartbeatPartition(t)
	in := schedule(t, p)
	for i := range in.Tasks {
		switch in.Tasks[i].ID {
		case mine.ID:
			in.Tasks[i].DependsOn = []string{owners.ID}
		case owners.ID:
			in.Tasks[i].DependsOn = []string{mine.ID}
		}
	}
	r := refusals(t, mustFail(set(t, p, in)))
	if len(r) != 1 || !strings.Contains(r[0].Reason, "dependency cycle") {
		t.Fatalf("refusals = %+v", r)
	}
}

func TestSetRefusesUnknownDependency(t *testing.T) {
	p, _, mine, _, _ := heartbeatPartition(t)
	in := schedule(t, p)
	for i := range in.Tasks {
		if in.Tasks[i].ID == mine.ID {
			in.Tasks[i].DependsOn = []string{"t-2001-01-01-00-00-00-nope"}
		}
	}
	r := refusals(t, mustFail(set(t, p, in)))
	if !strings.Contains(r[0].Reason, "unknown dependency") {
		t.Fatalf("refusals = %+v", r)
	}
}

func TestSetIsAllOrNothingAndListsEveryRefusal(t *testing.T) {
	p, _, mine, owners, busy := heartbeatPartition(t)
	before, _ := os.ReadFile(p.W.TasksFile())
	in := schedule(t, p)
	for i := range in.Tasks {
		switch in.Tasks[i].ID {
		case mine.ID:
			in.Tasks[i].Priority = 5 // allowed on its own
		case owners.ID:
			in.Tasks[i].Text = "x"
		case busy.ID:
			in.Tasks[i].Priority = 1
		}
	}
	in.Tasks = append(in.Tasks, Task{Text: "o", Standing: Owner})
	err := mustFail(set(t, p, in))
	if r := refusals(t, err); len(r) != 3 {
		t.Fatalf("refusals = %+v", r)
	}
	if !strings.Contains(err.Error(), owners.ID) || !strings.Contains(err.Error(), busy.ID) {
		t.Fatalf("message lists not every entry: %v", err)
	}
	after, _ := os.ReadFile(p.W.TasksFile())
	if !bytes.Equal(before, after) {
		t.Fatal("a refused set changed tasks.json")
	}
}

func TestDecodeSetIsStrict(t *testing.T) {
	for _, bad := range []string{`{"version":1,"tasks":[],"bogus":1}`, `{"version":1} {}`, `{"format":2,"version":1}`, `[]`} {
		if _, err := DecodeSet([]byte(bad)); !errors.Is(err, errs.ErrUsage) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// Omission cancels, so a set input without both arrays ({}, null, a
// missing key, not an object) is a usage error that changes nothing; an
// explicit empty array is a deliberate cancel-all.
func TestSetInputWithoutBothArraysIsRefused(t *testing.T) {
	for _, bad := range []string{`{}`, `null`, `{"version":1}`, `{"tasks":[]}`, `{"templates":[]}`, `{"tasks":null,"templates":[]}`, `{"tasks":[],"templates":null}`, `"x"`, `3`, ``} {
		_, err := DecodeSet([]byte(bad))
		if !errors.Is(err, errs.ErrUsage) || !strings.Contains(err.Error(), `both "tasks" and "templates" arrays`) {
			t.Errorf("%q: %v; want exit 2 naming both arrays", bad, err)
		}
	}
	in, err := DecodeSet([]byte(`{"tasks":[],"templates":[]}`))
	if err != nil || in.Tasks == nil || len(in.Tasks) != 0 {
		t.Fatalf("explicit empty arrays: %+v, %v", in, err)
	}
}

func TestSetRefusesEditingTextOfTemplateItDidNotFile(t *testing.T) {
	p, _, _, _, _ := heartbeatPartition(t)
	if _, err := p.AddTemplate(ctx, NewTemplate{ID: "owned", Cron: "@daily", Text: "the owner's words"}); err != nil {
		t.Fatal(err)
	}
	in := schedule(t, p)
	for i := range in.Templates {
		if in.Templates[i].ID == "owned" {
			in.Templates[i].Text = "hijacked"
		}
	}
	r := refusals(t, mustFail(set(t, p, in)))
	if len(r) != 1 || r[0].Entry != "template owned" || !strings.Contains(r[0].Reason, "did not file") {
		t.Fatalf("refusals = %+v", r)
	}
	if f := mustRead(t, p); f.Template("owned").Text != "the owner's words" {
		t.Fatal("the template's text changed")
	}
}

func TestSetRefusesChangingOwnerStandingTemplateButAllowsRetiring(t *testing.T) {
	p, _, _, _, _ := heartbeatPartition(t)
	if _, err := p.AddTemplate(ctx, NewTemplate{ID: "boss", Cron: "@daily", Text: "owner work", Standing: Owner}); err != nil {
		t.Fatal(err)
	}
	in := schedule(t, p)
	for i := range in.Templates {
		if in.Templates[i].ID == "boss" {
			in.Templates[i].Cron = "* * * * *"
			in.Templates[i].Overlap = "allow"
		}
	}
	r := refusals(t, mustFail(set(t, p, in)))
	if len(r) != 1 || r[0].Entry != "template boss" || !strings.Contains(r[0].Reason, "owner-standing") {
		t.Fatalf("refusals = %+v", r)
	}
	in = schedule(t, p)
	var keep []Template
	for _, tp := range in.Templates {
		if tp.ID != "boss" {
			keep = append(keep, tp)
		}
	}
	in.Templates = keep
	if _, err := set(t, p, in); err != nil {
		t.Fatalf("retiring an owner-standing template: %v", err)
	}
	if f := mustRead(t, p); f.Template("boss") != nil {
		t.Fatal("the template was not retired")
	}
}
