package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/agent"
	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/fakemodel"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

// The agent tests run the real agent CLI (make deps-agents installs the
// pinned pi into the host's /usr) in a real box through the real gateway;
// the model is lib/fakemodel, the anthropic provider's upstream in
// org.toml, with the real key in the vault.

const agentKey = "sk-ant-api03-REAL-agent-key-never-in-a-box-0123456789"

// agentFixture is worker dobby as an agent worker (spec extra: its agent
// lines) with fakemodel following script as its model, and roster-snap
// beside roster-box so the run's snapshot and change list are made.
func agentFixture(t *testing.T, name string, script fakemodel.Script) (*fixture, *fakemodel.Server) {
	t.Helper()
	needRoot(t)
	a, err := agent.For(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Find(a, ""); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v: CI installs it (make deps-agents)", err)
		}
		t.Skipf("%v (make deps-agents installs it)", err)
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+"/", "../roster-snap")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build roster-snap: %v\n%s", err, out)
	}
	for _, tool := range []string{"roster-task", "roster-lock", "roster-reaper"} {
		if err := os.Symlink(filepath.Join(os.Getenv("ROSTER_EXEC_PATH"), tool), filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("ROSTER_EXEC_PATH", dir)

	srv := fakemodel.New(agentKey, script)
	ln, err := fakemodel.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })

	f := newFixture(t, nil, fmt.Sprintf("agent = %q\nmodel = \"claude-sonnet-4-5\"", name))
	org := fmt.Sprintf("[gateway.anthropic]\nupstream = \"http://%s\"\n", ln.Addr())
	if err := os.WriteFile(f.h.OrgFile(), []byte(org), 0o644); err != nil {
		t.Fatal(err)
	}
	putVaultKey(t, f, "anthropic", agentKey)
	return f, srv
}

// agentScript: a bash tool call that writes a note into the store, keeps
// what the box can see of the environment and of the key, and reports
// through roster-task; then, after the tool result, a final text.
func agentScript(tool string) fakemodel.Script {
	cmd := `echo written-by-the-agent > ~/store/agent-note.txt && env > ~/store/env.txt && ` +
		`{ k=REAL-agent; grep -rqs "$k-key" /home /etc /tmp /run /opt /proc/[0-9]*/environ && echo FOUND > ~/store/leak.txt || true; } && ` +
		`roster-task complete "the note is written"`
	return fakemodel.Script{Turns: []fakemodel.Turn{
		{Text: "I will write the note.", Tool: &fakemodel.ToolCall{Name: tool, Input: map[string]any{"command": cmd}},
			InputTokens: 1200, OutputTokens: 40, CacheRead: 300},
		{Text: "Done: the note is in my store and the task is reported.", InputTokens: 1500, OutputTokens: 25},
	}}
}

// TestRealAgentInABoxThroughTheGatewayCompletesItsTask is agents.md's
// test: the real agent (pi; Claude Code, which runs here too), in a real
// box, through the real gateway, against the scripted model.
func TestRealAgentInABoxThroughTheGatewayCompletesItsTask(t *testing.T) {
	for _, tc := range []struct{ agent, tool, stop, session, config string }{
		{"pi", "bash", "stop", "agent/sessions/", "agent/pi/models.json"},
		{"claude", "Bash", "end_turn", "agent/claude/projects/", "agent/claude/.claude.json"},
	} {
		t.Run(tc.agent, func(t *testing.T) { testRealAgentInABox(t, tc.agent, tc.tool, tc.stop, tc.session, tc.config) })
	}
}

func testRealAgentInABox(t *testing.T, name, tool, stop, session, config string) {
	f, srv := agentFixture(t, name, agentScript(tool))
	rec, _ := f.dispatch(tms.NewTask{Text: "write a note into your store"})
	if rec.Attested != tms.AttestedCompleted {
		t.Fatalf("attested %q evidence %+v\n%s", rec.Attested, rec.Evidence, f.transcript(rec.ID))
	}
	note, err := os.ReadFile(filepath.Join(f.w.Store(), "agent-note.txt"))
	if err != nil || string(note) != "written-by-the-agent\n" {
		t.Fatalf("the note: %q %v", note, err)
	}
	if !home.IsSnapshotID(rec.Snapshot) {
		t.Errorf("snapshot %q", rec.Snapshot)
	}
	changes, _ := os.ReadFile(home.StoreChanges(f.w.Run(rec.ID)))
	if !strings.Contains(string(changes), "agent-note.txt") {
		t.Errorf("the change list lacks the note:\n%s", changes)
	}

	// The model saw the real key on every call; the box never had it.
	calls := srv.Calls()
	if len(calls) != 2 {
		t.Fatalf("model calls %+v\n%s", calls, f.transcript(rec.ID))
	}
	var in, out, cr int64
	for _, c := range calls {
		if c.Key != agentKey || c.Status != 200 || c.Model != "claude-sonnet-4-5" || c.Path != "/v1/messages" || !c.Stream {
			t.Errorf("call %+v", c)
		}
		in, out, cr = in+c.InputTokens, out+c.OutputTokens, cr+c.CacheRead
	}
	env, _ := os.ReadFile(filepath.Join(f.w.Store(), "env.txt"))
	if strings.Contains(string(env), "REAL-agent-key") || !strings.Contains(string(env), "ANTHROPIC_API_KEY=sk-ant-api03-roster-placeholder") {
		t.Errorf("box environment:\n%s", env)
	}
	if leak, err := os.ReadFile(filepath.Join(f.w.Store(), "leak.txt")); err == nil {
		t.Errorf("the real key is readable in the box: %s", leak)
	}
	filepath.Walk(f.w.Run(rec.ID), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if data, _ := os.ReadFile(p); strings.Contains(string(data), "REAL-agent-key") {
				t.Errorf("the real key is in the run folder: %s", p)
			}
		}
		return nil
	})

	// The gateway's measured tokens are the model's own figures.
	if rec.Cost.ModelCalls != 2 || rec.Cost.InputTokens != in || rec.Cost.OutputTokens != out || rec.Cost.CacheReadTokens != cr {
		t.Errorf("cost %+v, want 2 calls of %d in, %d out, %d cache read", rec.Cost, in, out, cr)
	}
	// run.json's agent record, from the agent's own stream.
	a := rec.Agent
	if a == nil {
		t.Fatalf("no agent record\n%s", f.transcript(rec.ID))
	}
	ag, _ := agent.For(name)
	exe, _ := agent.Find(ag, "")
	if a.Name != name || a.Version == "" || a.Version != agent.Version(ag, exe) || a.Turns != 2 || a.StopReason != stop ||
		a.FinalText != "Done: the note is in my store and the task is reported." || a.CostUSD == nil || *a.CostUSD <= 0 {
		t.Errorf("agent record %+v", a)
	}
	// pi's transcript leaves out its message_update repeats, not the rest.
	if tr := f.transcript(rec.ID); name == "pi" && (strings.Contains(tr, `"type":"message_update"`) ||
		!strings.Contains(tr, `"type":"message_end"`) || !strings.Contains(tr, `"type":"tool_execution_end"`)) {
		t.Errorf("pi's transcript:\n%.2000s", tr)
	}
	// Its session file, kept in the run.
	if !strings.HasPrefix(a.Session, session) {
		t.Fatalf("session %q", a.Session)
	}
	sess, err := os.ReadFile(filepath.Join(f.w.Run(rec.ID), a.Session))
	if err != nil || !strings.Contains(string(sess), "written-by-the-agent") {
		t.Errorf("session file: %v\n%.500s", err, sess)
	}
	if _, err := os.Stat(filepath.Join(f.w.Run(rec.ID), config)); err != nil {
		t.Errorf("generated configuration: %v", err)
	}
}

// TestAgentWhoseKeyIsRejectedFailsWithCredentialRejected: the model
// answers 401; pi stops without a report; the run is attested failed with
// the gateway's credential_rejected as its evidence.
func TestAgentWhoseKeyIsRejectedFailsWithCredentialRejected(t *testing.T) {
	f, srv := agentFixture(t, "pi", fakemodel.Script{Turns: []fakemodel.Turn{{Status: 401}}})
	rec, _ := f.dispatch(tms.NewTask{Text: "write a note"})
	if rec.Attested != tms.AttestedFailed || rec.Evidence == nil || !strings.Contains(rec.Evidence.GatewayRefusals, runs.RefuseCredentialRejected) {
		t.Fatalf("attested %q evidence %+v\n%s", rec.Attested, rec.Evidence, f.transcript(rec.ID))
	}
	for _, c := range srv.Calls() {
		if c.Key != agentKey {
			t.Errorf("call with key %q", c.Key)
		}
	}
	if rec.Agent == nil || rec.Agent.StopReason != "error" || !strings.Contains(rec.Evidence.Note, "401") {
		t.Errorf("agent %+v note %q", rec.Agent, rec.Evidence.Note)
	}
}

// TestAgentTheBoxCannotSeeFailsBeforeTheBoxStarts: a rootfs without the
// agent: the run fails with the install hint in its evidence, and no
// container was made.
func TestAgentTheBoxCannotSeeFailsBeforeTheBoxStarts(t *testing.T) {
	needRoot(t)
	root := t.TempDir()
	f := newFixture(t, nil, fmt.Sprintf("agent = \"pi\"\nrootfs = %q", root))
	task, run := f.claim(tms.NewTask{Text: "write a note"})
	if code, _, _ := f.box("run", "dobby", "--task", task, "--run", run); code == 0 {
		t.Fatal("roster-box run exited 0 for an agent the box cannot see")
	}
	rec, err := runs.ReadRecord(f.w.Run(run))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Attested != tms.AttestedFailed || rec.Evidence == nil || !strings.Contains(rec.Evidence.Note, "box did not start") ||
		!strings.Contains(rec.Evidence.Note, "npm install -g --prefix /usr @mariozechner/pi-coding-agent") {
		t.Fatalf("attested %q evidence %+v", rec.Attested, rec.Evidence)
	}
	if _, err := os.Stat(filepath.Join(home.ContainerRoot, home.ContainerID(rec.ID))); err == nil {
		t.Fatal("a container was made for an agent the box cannot see")
	}
}

// TestAgentOverItsBudgetFailsWithBudgetSpent: a proactive run whose worker
// spent its day's proactive_tokens in an earlier run is refused at its
// first model call (the model never sees it); pi stops without a report
// and the run is attested failed with budget_spent.
func TestAgentOverItsBudgetFailsWithBudgetSpent(t *testing.T) {
	f, srv := agentFixture(t, "pi", agentScript("bash"))
	org, _ := os.ReadFile(f.h.OrgFile())
	os.WriteFile(f.h.OrgFile(), append(org, "[budget]\nproactive_tokens = 2000\n"...), 0o644)
	first, _ := f.dispatch(tms.NewTask{Text: "write a note", Standing: tms.Proactive})
	if first.Attested != tms.AttestedCompleted || first.Cost.InputTokens+first.Cost.OutputTokens < 2000 {
		t.Fatalf("first run: attested %q cost %+v\n%s", first.Attested, first.Cost, f.transcript(first.ID))
	}
	before := len(srv.Calls())
	rec, _ := f.dispatch(tms.NewTask{Text: "write another note", Standing: tms.Proactive})
	if rec.Attested != tms.AttestedFailed || rec.Evidence == nil || !strings.Contains(rec.Evidence.GatewayRefusals, runs.RefuseBudgetSpent) {
		t.Fatalf("attested %q evidence %+v\n%s", rec.Attested, rec.Evidence, f.transcript(rec.ID))
	}
	if n := len(srv.Calls()); n != before {
		t.Errorf("the model saw %d calls of the refused run", n-before)
	}
	if rec.Agent == nil || rec.Agent.StopReason != "error" {
		t.Errorf("agent %+v", rec.Agent)
	}
}

// TestCeilingMidAgentKillsItsWholeTree: the agent's bash tool starts a
// long command and a background child; the task's ceiling ends the run,
// and no process of the box user is left.
func TestCeilingMidAgentKillsItsWholeTree(t *testing.T) {
	f, _ := agentFixture(t, "pi", fakemodel.Script{Turns: []fakemodel.Turn{
		{Tool: &fakemodel.ToolCall{Name: "bash", Input: map[string]any{"command": "(sleep 987651 &); sleep 987652"}}},
	}})
	// The ceiling leaves pi (node, in a 1-CPU box) ample time to start and
	// run its tool first; the test checks that it did.
	rec, _ := f.dispatch(tms.NewTask{Text: "take forever", Ceiling: "30s"})
	if rec.Ended != "ceiling" || rec.Attested != tms.AttestedFailed || rec.Evidence == nil || !rec.Evidence.Ceiling {
		t.Fatalf("ended %q attested %q evidence %+v\n%s", rec.Ended, rec.Attested, rec.Evidence, f.transcript(rec.ID))
	}
	if !strings.Contains(f.transcript(rec.ID), `"type":"tool_execution_start"`) {
		t.Fatalf("the tool never started:\n%s", f.transcript(rec.ID))
	}
	if out, _ := exec.Command("pgrep", "-u", fmt.Sprint(f.uid), "-f", "sleep 98765").Output(); len(out) > 0 {
		t.Errorf("processes of the box outlived its ceiling: %s", out)
	}
	if rec.Agent == nil || rec.Agent.Turns != 0 && rec.Agent.StopReason != "toolUse" {
		t.Errorf("agent %+v", rec.Agent)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestInteractiveAgentRunsItsTUIAndExitsCleanly: an ad-hoc run of an agent
// worker from a terminal starts the agent's TUI in the box (no prompt
// given, the same gateway); ctrl+d ends it, and the run is recorded.
func TestInteractiveAgentRunsItsTUIAndExitsCleanly(t *testing.T) {
	for _, name := range []string{"pi", "claude"} {
		t.Run(name, func(t *testing.T) { testInteractiveAgent(t, name) })
	}
}

func testInteractiveAgent(t *testing.T, name string) {
	f, srv := agentFixture(t, name, agentScript("bash"))
	m, sl := openPty(t)
	unix.IoctlSetWinsize(int(sl.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 30, Col: 100})
	var out syncBuffer
	env := &cli.Env{Name: "roster-box", Stdin: sl, Stdout: &out, Stderr: &out, Ctx: context.Background()}
	done := make(chan int, 1)
	go func() { done <- cli.MainEnv(env, &CLI{}, []string{"--home", f.h.Dir, "run", "dobby"}) }()
	// The TUI is up once it shows its model (pi) or its name (Claude Code).
	deadline := time.Now().Add(2 * time.Minute) // a bound on a hang, not a speed
	marker := map[string]string{"pi": "claude-sonnet-4-5", "claude": "Claude Code"}[name]
	for !strings.Contains(out.String(), marker) {
		if time.Now().After(deadline) {
			t.Fatalf("no TUI:\n%q", out.String())
		}
		select {
		case code := <-done:
			t.Fatalf("exited %d before its TUI showed:\n%q", code, out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	// ctrl+d on an empty editor: pi exits at once, Claude Code asks for a
	// second one within a short window ("Press Ctrl-D again to exit"), so
	// each second a pair is sent, 150 ms apart, until the run ends.
	var code int
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	ctrlD := func() {
		m.Write([]byte{4})
		time.Sleep(150 * time.Millisecond)
		m.Write([]byte{4})
	}
	ctrlD()
wait:
	for {
		select {
		case code = <-done:
			break wait
		case <-tick.C:
			if time.Now().After(deadline) {
				m.Write([]byte{3, 3})
				t.Fatalf("ctrl+d did not end the TUI:\n%q", out.String())
			}
			ctrlD()
		}
	}
	if code != 0 {
		t.Fatalf("exit %d:\n%q", code, out.String())
	}
	if len(srv.Calls()) != 0 {
		t.Errorf("the TUI called the model unasked: %+v", srv.Calls())
	}
	rec := f.lastRun()
	if rec.Kind != "adhoc" || rec.Agent == nil || rec.Agent.Name != name || rec.Agent.Version == "" {
		t.Errorf("record %+v agent %+v", rec, rec.Agent)
	}
}
