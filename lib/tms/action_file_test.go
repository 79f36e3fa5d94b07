package tms

import (
	"bytes"
	"os"
	"testing"

	"github.com/roster-sh/roster/lib/outbox"
)

// TestFileActionAfterAFinishedTask: a box may file a task after one that
// has finished (found in the history index, as for Add), and after a live
// one; the new task is settled or waiting as the dependency is.
func TestFileActionAfterAFinishedTask(t *testing.T) {
	p, _ := open(t, newHome(t, "dobby"), "dobby")
	done := mustAdd(t, p, NewTask{Text: "done first"})
	r0 := claim(t, p, done.ID)
	if _, err := p.Attest(ctx, done.ID, r0, good); err != nil {
		t.Fatal(err)
	}
	a := mustAdd(t, p, NewTask{Text: "a"})
	run := claim(t, p, a.ID)
	res, err := p.ApplyAction(ctx, run, a.ID, Action{N: 1, Kind: outbox.KindFile, Text: "after done", After: []string{done.ID}})
	if err != nil {
		t.Fatalf("file after a finished task: %+v, %v", res, err)
	}
	nt, err := p.Get(ctx, res.Task)
	if err != nil || len(nt.DependsOn) != 1 || nt.Settled[done.ID] != Completed {
		t.Fatalf("filed: %+v, %v", nt, err)
	}
	res2, err := p.ApplyAction(ctx, run, a.ID, Action{N: 2, Kind: outbox.KindFile, Text: "after a", After: []string{a.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.ApplyAction(ctx, run, a.ID, Action{N: 3, Kind: outbox.KindFile, Text: "after nothing", After: []string{"t-nope"}}); err == nil {
		t.Fatal("an unknown dependency was accepted")
	}
	r, err := p.Due(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e := entry(r, res.Task); e.Status != StateDue {
		t.Fatalf("after a completed task: %+v", e)
	}
	if e := entry(r, res2.Task); e.Status != StateWaiting {
		t.Fatalf("after a claimed task: %+v", e)
	}
	mustClean(t, p)
}

// TestFileActionKeepsOtherTasksAsTheirBytes: a file action, like an add,
// leaves the tasks it does not touch as they were written (a hand-edited
// entry stays as it is), appends its task, and the file it writes reads
// back whole and clean; the served task's rules (owner standing under an
// owner's task) come from its entry.
func TestFileActionKeepsOtherTasksAsTheirBytes(t *testing.T) {
	p, _ := open(t, newHome(t, "dobby"), "dobby")
	own := mustAdd(t, p, NewTask{Text: "owner ask"})
	mustAdd(t, p, NewTask{Text: "other", Priority: 3})
	run := claim(t, p, own.ID)
	before, err := os.ReadFile(p.W.TasksFile())
	if err != nil {
		t.Fatal(err)
	}
	// Edited by hand, still valid: an escape the writer would not write.
	before = bytes.Replace(before, []byte(`"text":"other"`), []byte(`"text":"oth\u0065r"`), 1)
	if err := os.WriteFile(p.W.TasksFile(), before, 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := p.ApplyAction(ctx, run, own.ID, Action{N: 1, Kind: outbox.KindFile, Text: "step"})
	if err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(p.W.TasksFile())
	if err != nil {
		t.Fatal(err)
	}
	block := before[bytes.Index(before, []byte("\n{\"id\":")):bytes.LastIndex(before, []byte("\n],\n\"templates\""))]
	if !bytes.Contains(after, block) {
		t.Fatalf("the other tasks were not kept as their bytes:\n%s\n---\n%s", before, after)
	}
	f := mustRead(t, p)
	if len(f.Tasks) != 3 || f.Tasks[1].Text != "other" || f.Tasks[2].ID != res.Task || f.Tasks[2].Standing != Owner || f.Tasks[2].FiledBy != run {
		t.Fatalf("tasks after the filing: %+v", f.Tasks)
	}
	mustClean(t, p)
}
