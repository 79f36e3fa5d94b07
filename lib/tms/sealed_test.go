package tms

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/roster-sh/roster/lib/errs"
)

// checkRaw fails unless r's block holds full's tasks, one a line, in
// order, and has and ids find each of them.
func checkRaw(t testing.TB, r *rawFile, full *File, data []byte) {
	t.Helper()
	var lines [][]byte
	if len(r.block) > 0 {
		if r.block[0] != '\n' {
			t.Fatalf("block does not start on a line of its own: %q", data)
		}
		lines = bytes.Split(r.block[1:], []byte(",\n"))
	}
	if len(lines) != len(full.Tasks) || r.n != len(full.Tasks) {
		t.Fatalf("raw read holds %d tasks (n %d), DecodeFile %d: %q", len(lines), r.n, len(full.Tasks), data)
	}
	ids := r.ids()
	for i, raw := range lines {
		var task Task
		if err := json.Unmarshal(raw, &task); err != nil || !reflect.DeepEqual(task, full.Tasks[i]) {
			t.Fatalf("raw task %d %q reads as %+v (%v), DecodeFile %+v", i, raw, task, err, full.Tasks[i])
		}
		if !r.has(task.ID) || ids[i] != task.ID {
			t.Fatalf("raw read does not find task %q (ids %q): %q", task.ID, ids, data)
		}
	}
	if len(ids) != len(lines) {
		t.Fatalf("ids %q for %d tasks", ids, len(lines))
	}
}

// An add leaves tasks.json sealed; the next add reads it through the seal
// and writes what a full decode and encode would.
func TestAddSealsTasksFile(t *testing.T) {
	h := newHome(t, "w")
	p, _ := open(t, h, "w")
	a := mustAdd(t, p, NewTask{Text: "a"})
	mustAdd(t, p, NewTask{Text: "b \"quoted\" \u00e9", After: []string{a.ID}})
	data, seal, err := readSealed(p.W.TasksFile())
	if err != nil {
		t.Fatal(err)
	}
	if seal == "" {
		t.Skip("the temporary folder's filesystem keeps no user attributes")
	}
	if !sealed(seal, data) {
		t.Fatalf("seal %q does not match tasks.json", seal)
	}
	r, rf, ok := decodeSealed(data)
	if !ok {
		t.Fatalf("a sealed tasks.json does not read as one: %s", data)
	}
	full, err := DecodeFile("tasks.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if rf.Version != full.Version || !reflect.DeepEqual(rf.Templates, full.Templates) {
		t.Fatalf("sealed read %+v, DecodeFile %+v", rf, full)
	}
	checkRaw(t, r, full, data)
	if want := encodeFile(full, "", t0); !bytes.Equal(data, want) {
		t.Fatalf("tasks.json is not the writer's form:\n%s\nwant\n%s", data, want)
	}
}

// A sealed file changed in place keeps its attribute but no longer matches
// it: it is checked task by task, and refused (never overwritten) if
// corrupt.
func TestSealDoesNotCoverAnEditedFile(t *testing.T) {
	h := newHome(t, "w")
	p, _ := open(t, h, "w")
	mustAdd(t, p, NewTask{Text: "a"})
	data, seal, err := readSealed(p.W.TasksFile())
	if err != nil {
		t.Fatal(err)
	}
	if seal == "" {
		t.Skip("the temporary folder's filesystem keeps no user attributes")
	}
	bad := bytes.Replace(data, []byte(`"state":"pending"`), []byte(`"state":"pendin!"`), 1)
	f, err := os.OpenFile(p.W.TasksFile(), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bad, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, seal2, _ := readSealed(p.W.TasksFile()); seal2 != seal {
		t.Fatalf("the in-place write dropped the seal (%q, was %q): the test proves nothing", seal2, seal)
	}
	if _, err := p.Add(ctx, NewTask{Text: "b"}); !errors.Is(err, errs.ErrRefused) {
		t.Fatalf("add on an edited sealed file: %v, want refused", err)
	}
	if after, _ := os.ReadFile(p.W.TasksFile()); !bytes.Equal(after, bad) {
		t.Fatal("the refused file was rewritten")
	}
}
