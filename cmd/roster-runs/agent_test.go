package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
)

// An interactive run (a terminal session, no event stream) is shown as
// such, not as "0 turns"; a streamed one counts its turns.
func TestShowInteractiveAgentRun(t *testing.T) {
	h := home.Home{Dir: t.TempDir()}
	end := time.Date(2026, 12, 6, 10, 0, 1, 0, time.UTC)
	for id, a := range map[string]*runs.AgentRecord{
		"2026-12-06-10-00-00-aaaa": {Name: "pi", Interactive: true},
		"2026-12-06-10-00-00-bbbb": {Name: "pi", Turns: 3},
	} {
		dir := h.Worker("dobby").Run(id)
		os.MkdirAll(dir, 0o755)
		rec := &runs.Record{ID: id, Worker: "dobby", Kind: "adhoc", StartedAt: end.Add(-time.Second), EndedAt: &end, Ended: "done", Agent: a}
		if err := runs.WriteRecord(dir, rec); err != nil {
			t.Fatal(err)
		}
	}
	show := func(id string) string { return runOK(t, h, "show", id) }
	if s := show("2026-12-06-10-00-00-aaaa"); !strings.Contains(s, "pi, interactive (a terminal session: turns not counted)") || strings.Contains(s, "0 turns") {
		t.Fatalf("interactive:\n%s", s)
	}
	if s := show("2026-12-06-10-00-00-bbbb"); !strings.Contains(s, "pi, 3 turns") {
		t.Fatalf("streamed:\n%s", s)
	}
}
