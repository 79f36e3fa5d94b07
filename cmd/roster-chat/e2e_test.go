package main

// End-to-end tests of roster-chat as a real process: the suite is built
// once (testbin), each test makes a home with an exec account whose bridge
// is contrib/chat-bridge/file-bridge (python3), and runs the real
// `roster-chat serve`. The fault tests kill it with SIGKILL at the two
// windows that matter (ROSTER_TEST_CRASH, lib/chat/crash.go) and restart
// it: nothing is lost, nothing is filed twice, a possible duplicate is
// marked resent.

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roster-sh/roster/internal/testbin"
	"github.com/roster-sh/roster/lib/chat"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/tms"
)

var bin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, remove := testbin.Temp()
	bin = dir
	code := m.Run()
	remove()
	os.Exit(code)
}

type chatEnv struct {
	t     *testing.T
	h     home.Home
	spool string
}

func newChatEnv(t *testing.T, channel string) *chatEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no processes")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed (the example bridge is a python script)")
	}
	dir := t.TempDir()
	e := &chatEnv{t: t, h: home.Home{Dir: filepath.Join(dir, "h")}, spool: filepath.Join(dir, "spool")}
	os.MkdirAll(filepath.Join(e.spool, "in"), 0o700)
	e.run("roster-task", "init")
	e.run("roster-task", "worker", "add", "dobby", "--command", "/bin/true", "--heartbeat", "off", "--uid", "291400")
	f, _ := os.OpenFile(e.h.SpecFile("dobby"), os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "\n[[channel]]\naccount = \"desk\"\n%s\n", channel)
	f.Close()
	root, _ := testbin.Root()
	f, _ = os.OpenFile(e.h.OrgFile(), os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "\n[chat.desk]\nprotocol = \"exec\"\ncommand = [%q, %q, \"--from\", \"alice\", %q]\n",
		py, filepath.Join(root, "contrib", "chat-bridge", "file-bridge"), e.spool)
	f.Close()
	return e
}

func (e *chatEnv) cmd(prog string, args ...string) *exec.Cmd {
	c := exec.Command(filepath.Join(bin, prog), args...)
	c.Env = append(os.Environ(), "ROSTER_HOME="+e.h.Dir, "ROSTER_EXEC_PATH="+bin)
	return c
}

func (e *chatEnv) run(prog string, args ...string) string {
	e.t.Helper()
	var out, errb bytes.Buffer
	c := e.cmd(prog, args...)
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		e.t.Fatalf("%s %s: %v\n%s%s", prog, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// serve starts roster-chat serve (crash: ROSTER_TEST_CRASH) and returns
// it with a channel closed when it has exited.
func (e *chatEnv) serve(crash string) (*exec.Cmd, chan struct{}, *bytes.Buffer) {
	e.t.Helper()
	c := e.cmd("roster-chat", "serve")
	var log bytes.Buffer
	c.Stderr = &log
	if crash != "" {
		c.Env = append(c.Env, "ROSTER_TEST_CRASH="+crash)
	}
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		e.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	e.t.Cleanup(func() {
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		<-done
	})
	return c, done, &log
}

// say drops a message file into the bridge's spool.
func (e *chatEnv) say(name, text string) {
	tmp := filepath.Join(e.spool, "in", name+".tmp")
	os.WriteFile(tmp, []byte(text), 0o600)
	os.Rename(tmp, filepath.Join(e.spool, "in", name+".txt"))
}

func (e *chatEnv) messages(channel string) []*chat.Message {
	rec, _ := chat.Open(e.h.Worker("dobby"), channel)
	lines, err := rec.Read(0)
	if err != nil {
		e.t.Fatal(err)
	}
	return chat.Fold(lines)
}

func (e *chatEnv) tasks() []tms.Task {
	data, err := os.ReadFile(e.h.Worker("dobby").TasksFile())
	if err != nil {
		return nil
	}
	f, err := tms.DecodeFile("tasks.json", data)
	if err != nil {
		e.t.Fatal(err)
	}
	return f.Tasks
}

func (e *chatEnv) sent() []map[string]any {
	data, _ := os.ReadFile(filepath.Join(e.spool, "sent.jsonl"))
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var m map[string]any
		if json.Unmarshal(l, &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

func waitFor(t *testing.T, what string, within time.Duration, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("timed out (%s) waiting for %s", within, what)
}

func exited(done chan struct{}, within time.Duration) bool {
	select {
	case <-done:
		return true
	case <-time.After(within):
		return false
	}
}

// kill -9 between the log and the filing: the restart files the message
// once; its redelivery (the bridge offers what was not acked) is not
// logged or filed again.
func TestKilledBetweenLogAndFileFilesOnce(t *testing.T) {
	e := newChatEnv(t, `chats = ["alice"]`+"\nowners = [\"alice\"]")
	e.say("m1", "hello, are you there?")
	_, done, log := e.serve("before-file")
	if !exited(done, 30*time.Second) {
		t.Fatalf("roster-chat did not reach its crash point\n%s", log)
	}
	msgs := e.messages("desk:alice")
	if len(msgs) != 1 || msgs[0].State != chat.Received || len(e.tasks()) != 0 {
		t.Fatalf("after the crash: want one message logged, not filed: %+v, tasks %d", msgs, len(e.tasks()))
	}
	_, _, log = e.serve("")
	waitFor(t, "the message filed after the restart", 30*time.Second, func() bool {
		m := e.messages("desk:alice")
		return len(m) == 1 && m[0].State == chat.Filed
	})
	time.Sleep(time.Second) // a redelivery, if any, has come by now
	msgs = e.messages("desk:alice")
	tasks := e.tasks()
	if len(msgs) != 1 || len(tasks) != 1 || tasks[0].Msg != msgs[0].NetID || tasks[0].Standing != tms.Owner {
		t.Fatalf("want one message, one owner relay: %+v %+v\n%s", msgs, tasks, log)
	}
	if _, err := os.Stat(filepath.Join(e.spool, "in", "done", "m1.txt")); err != nil {
		t.Fatalf("the bridge was never acked: %v\n%s", err, log)
	}
}

// kill -9 between the send and its log: the reply is sent again after the
// restart and marked resent (a possible duplicate, never a loss).
func TestKilledBetweenSendAndLogResends(t *testing.T) {
	e := newChatEnv(t, `chats = ["alice"]`+"\nowners = [\"alice\"]")
	out := e.run("roster-chat", "send", "dobby", "desk:alice", "the build is green")
	if !strings.HasPrefix(out, "queued as 1 ") {
		t.Fatalf("send: %q", out)
	}
	_, done, log := e.serve("after-send")
	if !exited(done, 30*time.Second) {
		t.Fatalf("roster-chat did not reach its crash point\n%s", log)
	}
	if s := e.sent(); len(s) != 1 || s[0]["text"] != "the build is green" {
		t.Fatalf("before the crash the bridge got: %v", s)
	}
	_, _, log = e.serve("")
	waitFor(t, "the reply logged after the restart", 30*time.Second, func() bool {
		m := e.messages("desk:alice")
		return len(m) == 1 && m[0].State == chat.Resent
	})
	if s := e.sent(); len(s) != 2 || s[1]["text"] != "the build is green" {
		t.Fatalf("want the reply sent again: %v\n%s", s, log)
	}
	lines := e.run("roster-chat", "log", "dobby", "desk:alice")
	if !strings.Contains(lines, "resent") || !strings.Contains(lines, "worker (operator)") {
		t.Fatalf("log:\n%s", lines)
	}
}

// A stranger gets one pairing code and nothing is filed; approved, the
// next message is filed with proactive standing.
func TestStrangerPairing(t *testing.T) {
	e := newChatEnv(t, `chats = ["*"]`+"\nowners = [\"bob\"]")
	_, _, log := e.serve("")
	e.say("s1", "let me in")
	e.say("s2", "please")
	waitFor(t, "a pairing code sent", 30*time.Second, func() bool { return len(e.sent()) == 1 })
	time.Sleep(500 * time.Millisecond)
	if len(e.sent()) != 1 || len(e.tasks()) != 0 {
		t.Fatalf("want one code and no task: %v %v\n%s", e.sent(), e.tasks(), log)
	}
	text, _ := e.sent()[0]["text"].(string)
	ls := e.run("roster-chat", "pair", "ls", "--json")
	var p chat.Pairing
	if err := json.Unmarshal([]byte(strings.TrimSpace(ls)), &p); err != nil || !strings.Contains(text, p.Code) || p.From != "alice" {
		t.Fatalf("pair ls %q vs the code sent %q: %v", ls, text, err)
	}
	for _, m := range e.messages("desk:alice") {
		if m.Dir == "in" && (m.State != chat.Dropped || m.Text != "") {
			t.Fatalf("a stranger's message must be dropped without its text: %+v", m)
		}
	}
	out := e.run("roster-chat", "pair", "approve", p.Code)
	if !strings.Contains(out, "alice may now reach dobby") {
		t.Fatalf("approve: %q", out)
	}
	e.say("s3", "thanks!")
	waitFor(t, "the approved sender's message filed", 30*time.Second, func() bool { return len(e.tasks()) == 1 })
	if tk := e.tasks()[0]; tk.Standing != tms.Proactive || tk.Text != "thanks!" {
		t.Fatalf("task: %+v", tk)
	}
}

// A room with mention = true: a message that does not name the worker is
// context only; one that does is filed, proactive even from an owner.
func TestRoomMentionGating(t *testing.T) {
	e := newChatEnv(t, `chats = ["ops"]`+"\nowners = [\"alice\"]")
	// The bridge says every file in the room "ops".
	org, _ := os.ReadFile(e.h.OrgFile())
	os.WriteFile(e.h.OrgFile(), bytes.Replace(org, []byte(`"--from", "alice",`), []byte(`"--from", "alice", "--chat", "ops", "--room",`), 1), 0o644)
	_, _, log := e.serve("")
	e.say("r1", "lunch anyone?")
	waitFor(t, "the unmentioned message logged", 30*time.Second, func() bool { return len(e.messages("desk:ops")) == 1 })
	e.say("r2", "dobby: is the build green?")
	waitFor(t, "the mention filed", 30*time.Second, func() bool {
		m := e.messages("desk:ops")
		return len(m) == 2 && m[1].State == chat.Filed
	})
	msgs := e.messages("desk:ops")
	if len(msgs) != 2 || msgs[0].State != chat.Context || msgs[0].Text != "lunch anyone?" || msgs[1].State != chat.Filed {
		for _, m := range msgs {
			t.Logf("%+v", m.Line)
		}
		t.Fatalf("record wrong\n%s", log)
	}
	if tk := e.tasks()[0]; tk.Standing != tms.Proactive || tk.Channel != "desk:ops" {
		t.Fatalf("a room message is proactive: %+v", tk)
	}
}

// A 1 MB message is logged and filed cut to 64 KiB, saying so; then a
// flood of 1,000 messages from one sender is logged once each and
// acknowledged, while at most 8 relays wait, and roster-chat's memory
// stays bounded.
func TestFloodBoundedAndBigMessageCut(t *testing.T) {
	e := newChatEnv(t, `chats = ["alice"]`+"\nowners = [\"alice\"]")
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	e.say("big", big)
	c, done, log := e.serve("")
	waitFor(t, "the big message filed", 30*time.Second, func() bool { return len(e.tasks()) == 1 })
	tk := e.tasks()[0]
	if len(tk.Text) > tms.MaxText || !strings.Contains(tk.Text, "this message was 1048576 bytes; it is cut here") {
		t.Fatalf("the big message: %d bytes filed, tail %q", len(tk.Text), tk.Text[len(tk.Text)-100:])
	}
	for i := 0; i < 1000; i++ {
		e.say(fmt.Sprintf("f%04d", i), fmt.Sprintf("flood %d", i))
	}
	waitFor(t, "1,001 messages logged", 120*time.Second, func() bool { return len(e.messages("desk:alice")) == 1001 })
	time.Sleep(500 * time.Millisecond)
	msgs := e.messages("desk:alice")
	seen := map[string]bool{}
	for _, m := range msgs {
		if seen[m.NetID] {
			t.Fatalf("logged twice: %+v", m)
		}
		seen[m.NetID] = true
	}
	if n := len(e.tasks()); n != chat.MaxPendingRelays {
		t.Fatalf("%d relays wait, want the bound %d", n, chat.MaxPendingRelays)
	}
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.Process.Pid))
	var rss int
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			fmt.Sscanf(strings.TrimSpace(v), "%d", &rss)
		}
	}
	t.Logf("roster-chat's peak RSS through the flood: %d KiB", rss)
	if rss == 0 || rss > 200<<10 {
		t.Fatalf("roster-chat's peak RSS %d KiB (want bounded, < 200 MiB)\n%s", rss, log)
	}
	// Every one acknowledged (the bridge moves a file once it has the ack).
	acked := func() int { d, _ := os.ReadDir(filepath.Join(e.spool, "in", "done")); return len(d) }
	end := time.Now().Add(60 * time.Second)
	for acked() != 1001 && time.Now().Before(end) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := acked(); n != 1001 {
		left, _ := os.ReadDir(filepath.Join(e.spool, "in"))
		var names []string
		for _, d := range left {
			names = append(names, d.Name())
		}
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		<-done // then its log is whole
		t.Fatalf("%d of 1,001 acknowledged; left in the spool: %v\n%s", n, names, log)
	}
}
