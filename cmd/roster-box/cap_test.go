package main

import (
	"os"
	"strings"
	"testing"

	"github.com/roster-sh/roster/lib/outbox"
	"github.com/roster-sh/roster/lib/tms"
)

func TestActionCapCountsRefusedActions(t *testing.T) {
	f := newFixture(t, job, "")
	f.setJob(`i=0; while [ $i -lt 1100 ]; do : > "$ROSTER_OUTBOX/new/junk$i"; i=$((i+1)); done
roster-task complete; echo "complete: $?"`)
	rec, _ := f.dispatch(tms.NewTask{Text: "flood the outbox"})
	if len(rec.Actions) != outbox.MaxActions {
		t.Fatalf("run.json lists %d actions, want %d", len(rec.Actions), outbox.MaxActions)
	}
	ev := rec.Evidence
	if ev == nil || ev.RefusedActions < 1100 || !strings.Contains(ev.Note, "the cap was reached") {
		t.Fatalf("evidence %+v", ev)
	}
	if rec.Report.Status != "none" || rec.Attested != tms.AttestedFailed {
		t.Fatalf("report %q attested %q: the complete past the cap was not refused", rec.Report.Status, rec.Attested)
	}
	if tr := f.transcript(rec.ID); !strings.Contains(tr, "complete: 2") {
		t.Fatalf("transcript: %s", tr)
	}
	journal, err := os.ReadFile(f.w.Journal())
	if err != nil {
		t.Fatal(err)
	}
	actions, capLines := 0, 0
	for _, line := range strings.Split(string(journal), "\n") {
		if strings.Contains(line, `"event":"action"`) {
			actions++
			if strings.Contains(line, "the cap was reached") {
				capLines++
			}
		}
	}
	if capLines != 1 || actions != outbox.MaxActions+1 {
		t.Fatalf("%d action lines journaled, %d saying the cap was reached; want %d and 1", actions, capLines, outbox.MaxActions+1)
	}
}

func TestOversizedActionWrittenStraightIntoNewIsRefusedBySize(t *testing.T) {
	f := newFixture(t, job, "")
	f.setJob(`head -c 2097152 /dev/zero | tr '\0' x > "$ROSTER_OUTBOX/new/1.json"; roster-task complete`)
	rec, _ := f.dispatch(tms.NewTask{Text: "a big action"})
	if len(rec.Actions) != 2 || !strings.Contains(rec.Actions[0].Outcome, "over 1048576 bytes") || rec.Actions[1].Outcome != "ok" {
		t.Fatalf("actions %+v", rec.Actions)
	}
}
