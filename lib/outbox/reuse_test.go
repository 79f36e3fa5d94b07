package outbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// direct writes an action straight into new/ (no claim), as a box may.
func direct(t *testing.T, dir, name, data string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "new", name), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func answerAll(t *testing.T, r *Reader) []Entry {
	t.Helper()
	es, err := r.Poll()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		o := &Outcome{Kind: "file", Outcome: "ok"}
		if e.Err != nil {
			o.Outcome, o.Code, o.Message = "refused", CodeBadInput, e.Err.Error()
		}
		if err := r.Answer(e, o); err != nil {
			t.Fatal(err)
		}
	}
	return es
}

func TestWriterNeverPicksANumberTheHostAnswered(t *testing.T) {
	dir, r := newOutbox(t)
	// Two actions written straight into new/ and answered: done/ holds
	// 2.json and 3.json, so the writer's hint (2 answers: start at 3)
	// lands on an answered number.
	direct(t, dir, "2.json", `{"format":1,"kind":"file","text":"a"}`)
	direct(t, dir, "3.json", `{"format":1,"kind":"file","text":"b"}`)
	if es := answerAll(t, r); len(es) != 2 {
		t.Fatalf("answered %d", len(es))
	}
	n, err := post(dir, []byte(`{"format":1,"kind":"file","text":"c"}`))
	if err != nil {
		t.Fatal(err)
	}
	if n == 2 || n == 3 {
		t.Fatalf("post picked %d, whose answer done/%d.json is already there", n, n)
	}
	es := answerAll(t, r)
	if len(es) != 1 || es[0].N != n {
		t.Fatalf("host saw %+v, want action %d", es, n)
	}
}

func TestHostRefusesAReusedNumberAndKeepsItsFirstAnswer(t *testing.T) {
	dir, r := newOutbox(t)
	direct(t, dir, "7.json", `{"format":1,"kind":"file","text":"first"}`)
	if es := answerAll(t, r); len(es) != 1 || es[0].Err != nil {
		t.Fatalf("first: %+v", es)
	}
	first, _ := os.ReadFile(filepath.Join(dir, "done", "7.json"))
	direct(t, dir, "7.json", `{"format":1,"kind":"file","text":"second"}`)
	es := answerAll(t, r)
	if len(es) != 1 || es[0].Err == nil || es[0].Action != nil {
		t.Fatalf("second 7.json: %+v, want a refusal", es)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "done", "7.json")); string(again) != string(first) {
		t.Fatalf("done/7.json replaced: %s", again)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "new")); len(ents) != 0 {
		t.Fatalf("new/ not emptied: %v", ents)
	}
}

func TestEntryStillBeingWrittenIsReadWhenItIsWhole(t *testing.T) {
	dir, r := newOutbox(t)
	f, err := os.Create(filepath.Join(dir, "new", "5.json"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"format":1,"kind":"fi`)
	if es, _ := r.Poll(); len(es) != 0 {
		t.Fatalf("a half-written entry was taken: %+v", es)
	}
	f.WriteString(`le","text":"whole"}`)
	f.Close()
	var es []Entry
	for i := 0; i < 3 && len(es) == 0; i++ {
		es, _ = r.Poll()
	}
	if len(es) != 1 || es[0].Err != nil || es[0].Action.Text != "whole" {
		t.Fatalf("got %+v, want the whole action", es)
	}
}

func TestOversizedEntryWrittenStraightIntoNewIsRefusedBySize(t *testing.T) {
	dir, r := newOutbox(t)
	f, err := os.Create(filepath.Join(dir, "new", "5.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString(`{"format":1,"kind":"file","text":"` + strings.Repeat("x", 100<<10))
	var es []Entry
	for i := 0; i < 3 && len(es) == 0; i++ {
		es, _ = r.Poll()
		if i == 0 {
			f.WriteString(strings.Repeat("x", 2<<20)) // still writing
		}
	}
	if len(es) != 1 || es[0].Err == nil || !strings.Contains(es[0].Err.Error(), "over 1048576 bytes") {
		t.Fatalf("got %+v, want a refusal by size", es)
	}
}

// PollUpTo takes the oldest n and leaves the rest in new/, unclaimed and
// unread, for the next look; each is taken once, in number order, and
// the run's count of taken actions grows only by what was taken.
func TestPollUpToLeavesTheRestForLater(t *testing.T) {
	dir, r := newOutbox(t)
	for _, n := range []string{"5", "1", "10", "2", "3"} {
		direct(t, dir, n+".json", `{"format":1,"kind":"file","text":"t`+n+`"}`)
	}
	var got []int
	for i := 0; i < 4; i++ {
		es, err := r.PollUpTo(2)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) > 2 {
			t.Fatalf("PollUpTo(2) took %d", len(es))
		}
		for _, e := range es {
			if e.Err != nil {
				t.Fatalf("%s: %v", e.Name, e.Err)
			}
			got = append(got, e.N)
			if err := r.Answer(e, &Outcome{Kind: "file", Outcome: "ok"}); err != nil {
				t.Fatal(err)
			}
		}
		if left := r.Ignored(); left != 5-len(got) {
			t.Fatalf("after %v: %d left in new/, want %d", got, left, 5-len(got))
		}
	}
	if want := []int{1, 2, 3, 5, 10}; len(got) != 5 || got[0] != 1 || got[1] != 2 || got[2] != 3 || got[3] != 5 || got[4] != 10 {
		t.Fatalf("taken %v, want %v", got, want)
	}
	if r.taken != 5 {
		t.Fatalf("taken count %d", r.taken)
	}
}
