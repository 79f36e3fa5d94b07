package tms

import (
	"testing"
)

func TestAddFilesPendingOwnerTask(t *testing.T) {
	h := newHome(t, "dobby")
	p, _ := open(t, h, "dobby")
	task := mustAdd(t, p, NewTask{Text: "hello"})
	if task.State != Pending || task.Standing != Owner || task.Kind != KindFiled || task.By != ByOwner {
		t.Fatalf("task = %+v", task)
	}
	f := mustRead(t, p)
	if f.Version != 1 || len(f.Tasks) != 1 || f.Tasks[0].ID != task.ID {
		t.Fatalf("file = %+v", f)
	}
	j := mustJournal(t, p)
	if len(j) != 1 || j[0].Seq != 1 || j[0].Version != 1 || j[0].Event != EvFiled {
		t.Fatalf("journal = %+v", j)
	}
	mustClean(t, p)
}
