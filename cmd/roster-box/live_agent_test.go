package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/chat"
	"github.com/roster-sh/roster/lib/fakemodel"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

// A channel's live session with the real agent (pi in its RPC mode,
// Claude Code with stream-json input) in a real box through the real
// gateway (docs/channels.md, agents.md "Streaming mode"): two messages a
// second apart reach one agent process (one run, one box), each is a turn
// whose final text is queued as the reply, each relay is attested at its
// turn's end, and the session ends idle.
func TestRealAgentLiveSessionTwoMessagesOneProcess(t *testing.T) {
	for _, name := range []string{"pi", "claude"} {
		t.Run(name, func(t *testing.T) { testRealAgentLive(t, name) })
	}
}

func testRealAgentLive(t *testing.T, name string) {
	script := fakemodel.Script{Turns: []fakemodel.Turn{
		{Text: "The build is green.", InputTokens: 900, OutputTokens: 10},
		{Text: "Yes, since this morning.", InputTokens: 950, OutputTokens: 12},
	}}
	f, srv := agentFixture(t, name, script)
	sf, _ := os.OpenFile(f.h.SpecFile("dobby"), os.O_APPEND|os.O_WRONLY, 0)
	sf.WriteString("\n[[channel]]\naccount = \"team\"\nchats = [\"alice\"]\nowners = [\"alice\"]\nlive = \"2s\"\n")
	sf.Close()
	const ch = "team:alice"
	rec, _ := chat.Open(f.w, ch)
	first := tms.NewTask{Text: "is the build green?", Kind: tms.KindRelay, Standing: tms.Owner, Channel: ch, From: "alice", Msg: "m1"}
	rec.Append(t.Context(), chat.Line{Dir: "in", From: "alice", Verified: true, Standing: tms.Owner, Text: first.Text, NetID: "m1", State: chat.Received})
	task1, run := f.claim(first)
	done := make(chan int, 1)
	var errOut string
	go func() {
		code, _, errb := f.box("run", "dobby", "--task", task1, "--run", run)
		errOut = errb
		done <- code
	}()
	replies := func() []string {
		lines, _ := rec.Read(0)
		var out []string
		for _, m := range chat.Fold(lines) {
			if m.Dir == "out" {
				out = append(out, m.Text)
			}
		}
		return out
	}
	for end := time.Now().Add(90 * time.Second); len(replies()) < 1; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no first reply\n%s", f.transcript(run))
		}
	}
	time.Sleep(time.Second)
	rec.Append(t.Context(), chat.Line{Dir: "in", From: "alice", Verified: true, Standing: tms.Owner, Text: "since when?", NetID: "m2", State: chat.Received})
	task2, err := f.part.Add(t.Context(), tms.NewTask{Text: "since when?", Kind: tms.KindRelay, Standing: tms.Owner, Channel: ch, From: "alice", Msg: "m2"})
	if err != nil {
		t.Fatal(err)
	}
	var code int
	select {
	case code = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("the session did not end\n%s", f.transcript(run))
	}
	if code != 0 {
		t.Fatalf("roster-box run: exit %d: %s", code, errOut)
	}
	r, err := runs.ReadRecord(f.w.Run(run))
	if err != nil {
		t.Fatal(err)
	}
	if r.Ended != "idle" || r.Live == nil || r.Live.Turns != 2 || len(r.Live.Tasks) != 2 || r.Live.Tasks[1] != task2.ID || r.Attested != tms.Completed {
		t.Fatalf("record: ended %q attested %q session %+v evidence %+v\n%s", r.Ended, r.Attested, r.Live, r.Evidence, f.transcript(run))
	}
	got := replies()
	if len(got) != 2 || got[0] != "The build is green." || got[1] != "Yes, since this morning." {
		t.Fatalf("replies %q", got)
	}
	calls := srv.Calls()
	// (Claude Code puts its system reminders first in its first user
	// message: the question is past the 4 KiB the server keeps.)
	if len(calls) != 2 || (name == "pi" && !strings.Contains(calls[0].LastUser, "is the build green?")) ||
		strings.Contains(calls[0].LastUser, "since when?") || !strings.Contains(calls[1].LastUser, "since when?") {
		t.Fatalf("model calls: %+v", calls)
	}
	for _, id := range []string{task1, task2.ID} {
		if tk, _, err := f.part.ShowEnded(t.Context(), id); err != nil || tk.State != tms.Completed {
			t.Fatalf("relay %s: %+v %v", id, tk, err)
		}
	}
	lines, _ := rec.Read(0)
	answered := 0
	for _, m := range chat.Fold(lines) {
		if m.Dir == "in" && m.State == chat.Answered && m.Run == run {
			answered++
		}
	}
	if answered != 2 {
		t.Fatalf("want both messages marked answered by %s, got %d", run, answered)
	}
}
