package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roster-sh/roster/internal/testbin"
	"github.com/roster-sh/roster/lib/fakemodel"
)

// liveCapture, when set, is a folder the real live sessions' output is
// saved to, as testdata/live-*.jsonl were made:
//
//	go test -run 'TestRealAgentLive' ./lib/agent -live-capture=$PWD/lib/agent/testdata
var liveCapture = flag.String("live-capture", "", "save the real live sessions' stdout into this folder")

// TestRealAgentLiveSessionTwoMessagesOneProcess starts the real agent CLI
// once per PrepareLive, the way TestRealAgentOnTheHostFollowsTheScript
// runs it (the host's /usr, a network namespace of its own, the scripted
// model behind roster-reaper's relay), writes two messages 1 s apart, the
// second after the first turn ended, and checks both turns end in that
// one process with the script's texts, the model saw both messages in
// order with the briefing in its system prompt, and the agent exits when
// its input is closed.
func TestRealAgentLiveSessionTwoMessagesOneProcess(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a network namespace of its own needs root (CI runs as root)")
	}
	bin, remove := testbin.Temp("roster-reaper")
	defer remove()
	for _, name := range []string{"pi", "claude"} {
		t.Run(name, func(t *testing.T) {
			l := startLive(t, bin, name, fakemodel.Script{Turns: []fakemodel.Turn{
				{Text: "First answer."}, {Text: "Second answer."},
			}})
			defer l.save("two-turns")
			texts := []string{"message one: say the first thing", "message two: say the second thing"}
			want := []string{"First answer.", "Second answer."}
			var pids []int
			for i, text := range texts {
				if i > 0 {
					time.Sleep(time.Second)
				}
				l.send(text)
				if tu := l.wait(); tu.FinalText != want[i] || tu.Err != "" {
					t.Errorf("turn %d: %+v", i+1, tu)
				}
				pids = append(pids, agentPid(l.cmd.Process.Pid))
			}
			if pids[0] == 0 || pids[0] != pids[1] {
				t.Errorf("the agent's pid at each turn's end: %v", pids)
			}
			if err := l.close(); err != nil {
				t.Errorf("%s on its input's end: %v\n%s", name, err, l.stderr.String())
			}
			select {
			case tu := <-l.turns.Ended():
				t.Errorf("a turn end nobody asked for: %+v", tu)
			default:
			}
			// The model saw message one, then message two, each call with
			// the key and the briefing in its system prompt.
			calls := l.model.Calls()
			system := l.model.systems()
			var seen []int
			for i, c := range calls {
				if c.Key != l.key || c.Status != 200 || c.Path != "/v1/messages" {
					t.Errorf("call %+v", c)
				}
				if i >= len(system) || !system[i] {
					t.Errorf("call %d: the briefing is not in its system prompt", i)
				}
				for j, text := range texts {
					if strings.Contains(c.LastUser, text) {
						seen = append(seen, j)
					}
				}
			}
			if fmt.Sprint(seen) != "[0 1]" {
				t.Errorf("messages the model saw, in order: %v (calls %+v)", seen, calls)
			}
		})
	}
}

// TestRealAgentLiveCapture records the other real streams testdata/
// holds, only when -live-capture is given (the unit tests assert on the
// recordings): a turn with a tool call; a model error, twice (the fake
// model's turn is the count of assistant messages, and neither agent keeps
// the failed one in its history); a message sent while a tool runs, then
// one after the turn; and the input closed mid-turn. What an agent does
// with a message mid-turn depends on timing (live.go): the recordings
// testdata/ keeps of it are from several runs.
func TestRealAgentLiveCapture(t *testing.T) {
	if *liveCapture == "" {
		t.Skip("only with -live-capture")
	}
	if os.Geteuid() != 0 {
		t.Skip("a network namespace of its own needs root")
	}
	bin, remove := testbin.Temp("roster-reaper")
	defer remove()
	tool := map[string]string{"pi": "bash", "claude": "Bash"}
	// next logs the next turn end, or that none came in d.
	next := func(t *testing.T, l *liveProc, d time.Duration) {
		select {
		case tu := <-l.turns.Ended():
			t.Logf("turn end %+v", tu)
		case <-time.After(d):
			t.Logf("no turn end in %s", d)
		}
	}
	for _, name := range []string{"pi", "claude"} {
		t.Run(name+"/tool", func(t *testing.T) {
			l := startLive(t, bin, name, fakemodel.Script{Turns: []fakemodel.Turn{
				{Text: "Looking.", Tool: &fakemodel.ToolCall{Name: tool[name], Input: map[string]any{"command": "echo looked"}}},
				{Text: "It says looked."},
			}})
			defer l.save("tool-turn")
			l.send("what does it say?")
			next(t, l, 90*time.Second)
			l.close()
		})
		t.Run(name+"/error", func(t *testing.T) {
			l := startLive(t, bin, name, fakemodel.Script{Turns: []fakemodel.Turn{{Status: 400}}})
			defer l.save("model-error")
			l.send("first")
			next(t, l, 90*time.Second)
			time.Sleep(time.Second)
			l.send("second")
			next(t, l, 90*time.Second)
			l.close()
		})
		t.Run(name+"/mid-turn", func(t *testing.T) {
			l := startLive(t, bin, name, fakemodel.Script{Turns: []fakemodel.Turn{
				{Text: "Waiting.", Tool: &fakemodel.ToolCall{Name: tool[name], Input: map[string]any{"command": "sleep 3; echo waited"}}},
				{Text: "Waited."}, {Text: "Next one."},
			}})
			defer l.save("mid-turn")
			l.send("wait a little")
			// mid-turn for sure: its tool runs (pi takes a prompt that comes
			// before its first turn started, then loses it)
			l.waitOutput(map[string]string{"pi": `"tool_execution_start"`, "claude": `"task_started"`}[name])
			time.Sleep(500 * time.Millisecond)
			l.send("and this one mid-turn")
			next(t, l, 90*time.Second)
			next(t, l, 5*time.Second)
			l.send("a third message after the turn")
			next(t, l, 90*time.Second)
			next(t, l, 5*time.Second)
			l.close()
			for _, c := range l.model.Calls() {
				t.Logf("call: turn %d, last user %.60q", c.Turn, c.LastUser)
			}
		})
		t.Run(name+"/eof-mid-turn", func(t *testing.T) {
			l := startLive(t, bin, name, fakemodel.Script{Turns: []fakemodel.Turn{
				{Text: "Waiting.", Tool: &fakemodel.ToolCall{Name: tool[name], Input: map[string]any{"command": "sleep 3; echo waited"}}},
				{Text: "Waited."},
			}})
			defer l.save("eof-mid-turn")
			l.send("wait a little")
			time.Sleep(1500 * time.Millisecond)
			start := time.Now()
			t.Logf("exit on input's end: %v after %s", l.close(), time.Since(start))
			next(t, l, time.Second)
		})
	}
}

const liveBriefingMark = "LIVE-BRIEFING-MARK-7f3a"

// liveModel is the scripted model behind a recorder of whether each
// call's system prompt carries the briefing.
type liveModel struct {
	*fakemodel.Server
	mu     sync.Mutex
	system []bool
}

func (m *liveModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if r.Method == http.MethodPost && r.URL.Path == "/v1/messages" { // Claude Code's HEAD / is no call
		var req struct {
			System json.RawMessage `json:"system"`
		}
		_ = json.Unmarshal(body, &req)
		m.mu.Lock()
		m.system = append(m.system, bytes.Contains(req.System, []byte(liveBriefingMark)))
		m.mu.Unlock()
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	m.Server.ServeHTTP(w, r)
}

func (m *liveModel) systems() []bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]bool(nil), m.system...)
}

// liveProc is a real agent running per PrepareLive on the host.
type liveProc struct {
	t              *testing.T
	a              *Agent
	exe, key       string
	model          *liveModel
	cmd            *exec.Cmd
	stdin          io.WriteCloser
	turns          *Turns
	stdout, stderr syncBuffer
	exited         chan error
}

// startLive starts agent name's live session against the scripted model
// as TestRealAgentOnTheHostFollowsTheScript runs an agent: box paths
// mapped into a temporary folder, a network namespace with loopback only
// where roster-reaper relays 127.0.0.1:3128 to the model's Unix socket.
// pi is given the briefing's file (as in a box), Claude Code its text.
func startLive(t *testing.T, bin, name string, script fakemodel.Script) *liveProc {
	a, _ := For(name)
	exe, err := Find(a, "")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v: CI installs it (make deps-agents)", err)
		}
		t.Skipf("%v (make deps-agents installs it)", err)
	}
	l := &liveProc{t: t, a: a, exe: exe, key: "sk-ant-api03-test-key-the-model-expects", exited: make(chan error, 1)}
	l.model = &liveModel{Server: fakemodel.New(l.key, script)}
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	os.MkdirAll(home, 0o755)
	sock := filepath.Join(dir, "model.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: l.model}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })

	briefing := "You are the worker's live chat session. " + liveBriefingMark
	in := Input{Briefing: briefing, Provider: "anthropic", ProviderStyle: "anthropic", BaseURL: "http://127.0.0.1:3128", Key: l.key}
	if name == "pi" {
		in.BriefingPath = filepath.Join(dir, "briefing.md")
		os.WriteFile(in.BriefingPath, []byte(briefing+"\n"), 0o644)
	}
	p, err := a.PrepareLive(in)
	if err != nil {
		t.Fatal(err)
	}
	agentDir := filepath.Join(dir, "agent")
	for f, b := range p.Files {
		os.MkdirAll(filepath.Dir(filepath.Join(agentDir, f)), 0o755)
		os.WriteFile(filepath.Join(agentDir, f), b, 0o644)
	}
	mapPath := func(s string) string { return strings.ReplaceAll(s, BoxAgentDir, agentDir) }
	args := make([]string, len(p.Command)-1)
	for i, c := range p.Command[1:] {
		args[i] = mapPath(c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	wrap := append([]string{"--net", "--", "/bin/sh", "-c", `ip link set lo up && exec "$0" "$@"`,
		filepath.Join(bin, "roster-reaper"), "--gateway=127.0.0.1:3128," + sock, "--", exe}, args...)
	l.cmd = exec.CommandContext(ctx, "unshare", wrap...)
	l.cmd.Dir = home
	l.cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin:/usr/sbin:/sbin", "IS_SANDBOX=1"} // claude refuses bypassPermissions as root elsewhere
	for _, e := range p.Env {
		l.cmd.Env = append(l.cmd.Env, mapPath(e))
	}
	l.turns = NewTurns(a.Name)
	l.cmd.Stdout, l.cmd.Stderr = io.MultiWriter(l.turns, &l.stdout), &l.stderr
	if l.stdin, err = l.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { l.exited <- l.cmd.Wait() }()
	return l
}

func (l *liveProc) send(text string) {
	l.t.Helper()
	msg, err := l.a.Message(text)
	if err != nil {
		l.t.Fatal(err)
	}
	if _, err := l.stdin.Write(msg); err != nil {
		l.t.Fatalf("message %q: %v\n%s", text, err, l.stderr.String())
	}
}

// wait is the next turn's end; the agent exiting first, or no turn end
// in 90 s, fails the test.
func (l *liveProc) wait() Turn {
	l.t.Helper()
	select {
	case tu := <-l.turns.Ended():
		return tu
	case err := <-l.exited:
		l.exited <- err
		l.t.Fatalf("%s exited mid-turn: %v\n%s", l.a.Name, err, l.stderr.String())
	case <-time.After(90 * time.Second):
		l.t.Fatalf("the turn did not end\nstdout:\n%s\nstderr:\n%s", l.stdout.String(), l.stderr.String())
	}
	return Turn{}
}

// waitOutput waits up to 90 s for the agent's stdout to hold s.
func (l *liveProc) waitOutput(s string) {
	l.t.Helper()
	for end := time.Now().Add(90 * time.Second); !strings.Contains(l.stdout.String(), s); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			l.t.Fatalf("no %s in the output:\n%s", s, l.stdout.String())
		}
	}
}

// close closes the agent's input and waits up to 30 s for it to exit.
func (l *liveProc) close() error {
	l.stdin.Close()
	select {
	case err := <-l.exited:
		l.exited <- err
		return err
	case <-time.After(30 * time.Second):
		l.t.Fatalf("%s did not exit on its input's end", l.a.Name)
	}
	return nil
}

// save writes the session's stdout to -live-capture, when given.
func (l *liveProc) save(what string) {
	if *liveCapture == "" {
		return
	}
	f := filepath.Join(*liveCapture, fmt.Sprintf("live-%s-%s-%s.jsonl", l.a.Name, Version(l.a, l.exe), what))
	if err := os.WriteFile(f, l.stdout.Bytes(), 0o644); err != nil {
		l.t.Error(err)
	}
}

// agentPid is the pid of the agent: the one child of root (the unshare,
// exec'd into its shell, exec'd into roster-reaper, which runs the
// agent); 0 when there is not exactly one.
func agentPid(root int) int {
	// a Go program forks from any of its threads: each lists its own
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", root))
	var f []string
	for _, task := range tasks {
		b, _ := os.ReadFile(task)
		f = append(f, strings.Fields(string(b))...)
	}
	if len(f) != 1 {
		return 0
	}
	pid, _ := strconv.Atoi(f[0])
	return pid
}

// syncBuffer is a bytes.Buffer safe for the pumps and the test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}
