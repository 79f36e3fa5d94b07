package tms

import (
	"os"
	"testing"

	"github.com/roster-sh/roster/lib/outbox"
)

// look is the dispatcher's look at a partition: its claimed tasks and the
// cursor after it.
func look(t *testing.T, p *Partition) ([]string, Cursor) {
	t.Helper()
	r, err := p.Due(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !r.At.Known() {
		t.Fatal("a look at a quiet partition does not know where it stood in the journal")
	}
	var ids []string
	for _, e := range r.Entries {
		if e.State == Claimed {
			ids = append(ids, e.ID)
		}
	}
	ids2, at2, err := p.Claims(ctx)
	if err != nil || len(ids2) != len(ids) || at2 != r.At {
		t.Fatalf("Claims = %v, %v, %v; Due saw %v at %v", ids2, at2, err, ids, r.At)
	}
	return ids, r.At
}

// TestClaimsChangedOnlyByClaimsAndTemplates: after a look, filings (the
// worker's from its box, a person's), actions journaled, a gate proposed
// and an edit of a pending task leave the claims as they were; a claim, a
// claim's end, a cancel and a template each change them (or may).
func TestClaimsChangedOnlyByClaimsAndTemplates(t *testing.T) {
	p, _ := open(t, newHome(t, "dobby"), "dobby")
	a := mustAdd(t, p, NewTask{Text: "a"})
	b := mustAdd(t, p, NewTask{Text: "b"})
	run := claim(t, p, a.ID)
	claimed, at := look(t, p)
	if len(claimed) != 1 || claimed[0] != a.ID {
		t.Fatalf("claimed = %v", claimed)
	}
	if next, changed := p.ClaimsChanged(at, claimed); changed || next != at {
		t.Fatalf("nothing appended: %v, %v (was %v)", next, changed, at)
	}

	// None of these changes a claim.
	mustAdd(t, p, NewTask{Text: "by hand"})
	for i := 0; i < 3; i++ {
		if _, err := p.ApplyAction(ctx, run, a.ID, Action{N: i + 1, Kind: outbox.KindFile, Text: "filed from the box"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.ApplyAction(ctx, run, a.ID, Action{N: 4, Kind: outbox.KindFile, Text: ""}); err == nil {
		t.Fatal("an empty filing was accepted")
	}
	if _, err := p.ApplyAction(ctx, run, a.ID, Action{N: 5, Kind: outbox.KindPropose, Text: "push?"}); err != nil {
		t.Fatal(err)
	}
	text := "b, edited"
	if _, _, err := p.EditTask(ctx, b.ID, Edit{Text: &text}, ByOwner); err != nil {
		t.Fatal(err)
	}
	next, changed := p.ClaimsChanged(at, claimed)
	if changed || next == at {
		t.Fatalf("filings, actions, a gate and an edit: changed=%v, cursor %v -> %v", changed, at, next)
	}
	if _, at2 := look(t, p); next != at2 {
		t.Fatalf("the cursor after the lines read is %v, a look says %v", next, at2)
	}

	// Each of these does.
	cases := []struct {
		name   string
		change func()
	}{
		{"a claim", func() { claim(t, p, b.ID) }},
		{"a claim's end", func() {
			if _, err := p.Attest(ctx, a.ID, run, good); err != nil {
				t.Fatal(err)
			}
		}},
		{"a cancel of a claimed task", func() {
			if _, err := p.Cancel(ctx, b.ID, "enough", ByOwner); err != nil {
				t.Fatal(err)
			}
		}},
		{"a template", func() {
			if _, err := p.AddTemplate(ctx, NewTemplate{ID: "daily", Cron: "0 9 * * *", Text: "report"}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		claimed, at := look(t, p)
		c.change()
		if next, changed := p.ClaimsChanged(at, claimed); !changed || next != at {
			t.Fatalf("%s: changed=%v, cursor %v -> %v", c.name, changed, at, next)
		}
	}
}

// TestClaimsChangedCannotTellIsChanged: a cursor it cannot place (unknown,
// a journal cut below it or rewritten, an unreadable line) says changed,
// so the caller reads the partition; a line still being appended is left
// for later.
func TestClaimsChangedCannotTellIsChanged(t *testing.T) {
	p, _ := open(t, newHome(t, "dobby"), "dobby")
	mustAdd(t, p, NewTask{Text: "a"})
	claimed, at := look(t, p)
	if _, changed := p.ClaimsChanged(Cursor{}, nil); !changed {
		t.Fatal("an unknown cursor is unchanged")
	}

	// A half-appended line: not read, the cursor stays.
	j, err := os.OpenFile(p.W.Journal(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.WriteString(`{"seq":9,"version":9,"event":"claim`); err != nil {
		t.Fatal(err)
	}
	if next, changed := p.ClaimsChanged(at, claimed); changed || next != at {
		t.Fatalf("a torn tail: changed=%v, cursor %v -> %v", changed, at, next)
	}
	// Finished as garbage: refused by every reader, so changed here.
	if _, err := j.WriteString("\n"); err != nil {
		t.Fatal(err)
	}
	j.Close()
	if _, changed := p.ClaimsChanged(at, claimed); !changed {
		t.Fatal("an unreadable line is unchanged")
	}

	// Cut below the cursor; rewritten so that the line ending there is
	// another (as a forget rewrites it).
	data, err := os.ReadFile(p.W.Journal())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.W.Journal(), data[:at.off-1], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, changed := p.ClaimsChanged(at, claimed); !changed {
		t.Fatal("a journal cut below the cursor is unchanged")
	}
	if err := os.WriteFile(p.W.Journal(), data[:at.off], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, changed := p.ClaimsChanged(at, claimed); changed {
		t.Fatal("the journal as it was at the look: changed")
	}
	if _, changed := p.ClaimsChanged(Cursor{seq: at.seq + 1, off: at.off, ok: true}, claimed); !changed {
		t.Fatal("a cursor whose line has another seq is unchanged")
	}
	if _, changed := p.ClaimsChanged(Cursor{seq: at.seq, off: at.off - 2, ok: true}, claimed); !changed {
		t.Fatal("a cursor inside a line is unchanged")
	}

	// An empty partition: no journal yet is the start.
	q, _ := open(t, newHome(t, "kreacher"), "kreacher")
	if _, changed := q.ClaimsChanged(cursorAt(0, 0), nil); changed {
		t.Fatal("no journal, from its start: changed")
	}
}
