package main

// End to end against real chat servers started on 127.0.0.1 (Prosody,
// ngircd: lib/chat/chattest) with real boxes: the real roster-dispatch,
// which runs roster-chat serve, and a person whose client is the
// project's own adapter for the protocol, a full client of the network
// (it logs in, sends and receives as any other).

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/chat"
	"github.com/roster-sh/roster/lib/chat/chattest"
	"github.com/roster-sh/roster/lib/chat/irc"
	"github.com/roster-sh/roster/lib/chat/xmpp"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

// person is someone on the network, in a test.
type person struct {
	a    chat.Adapter
	mu   sync.Mutex
	got  []chat.Inbound
	stop func()
}

func startPerson(t *testing.T, a chat.Adapter) *person {
	ctx, cancel := context.WithCancel(context.Background())
	p := &person{a: a}
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Run(ctx, func(_ context.Context, m chat.Inbound) error {
			p.mu.Lock()
			p.got = append(p.got, m)
			p.mu.Unlock()
			return nil
		})
	}()
	p.stop = func() { cancel(); <-done }
	t.Cleanup(p.stop)
	return p
}

// say sends text to chat, retrying while the person's client connects.
func (p *person) say(t *testing.T, chat, text string) {
	t.Helper()
	var err error
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if _, err = p.a.Send(context.Background(), chat, text); err == nil {
			return
		}
	}
	t.Fatalf("the person could not say %q: %v", text, err)
}

// heard waits for a message whose text holds want.
func (p *person) heard(t *testing.T, want string, within time.Duration) chat.Inbound {
	t.Helper()
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		p.mu.Lock()
		for _, m := range p.got {
			if strings.Contains(m.Text, want) {
				p.mu.Unlock()
				return m
			}
		}
		p.mu.Unlock()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Fatalf("the person never heard %q (heard %+v)", want, p.got)
	return chat.Inbound{}
}

type serverEnv struct {
	t   *testing.T
	h   home.Home
	log *syncLog
}

type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *syncLog) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// newServerEnv makes a home with worker dobby (command script, channel
// spec) and org.toml's chat account, puts password in the vault as
// chat-ACCOUNT, and starts roster-dispatch, which starts roster-chat.
func newServerEnv(t *testing.T, script, channel, account, password string) *serverEnv {
	t.Helper()
	if os.Geteuid() != 0 || testing.Short() {
		t.Skip("needs root: boxes are real containers (CI runs as root)")
	}
	e := &serverEnv{t: t, h: home.Home{Dir: filepath.Join(t.TempDir(), "h")}, log: &syncLog{}}
	ce := &chatEnv{t: t, h: e.h}
	ce.run("roster-task", "init")
	ce.run("roster-task", "worker", "add", "dobby", "--heartbeat", "off", "--uid", "291410",
		"--command", "/bin/sh", "--command=-c", "--command", script)
	f, _ := os.OpenFile(e.h.SpecFile("dobby"), os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "\n[[channel]]\n%s\n", channel)
	f.Close()
	f, _ = os.OpenFile(e.h.OrgFile(), os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "\n%s\n", account)
	f.Close()
	if password != "" {
		c := ce.cmd("roster-task", "key", "put", "chat-team")
		c.Stdin = strings.NewReader(password + "\n")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("key put: %v\n%s", err, out)
		}
	}
	d := ce.cmd("roster-dispatch", "--poll", "200ms")
	d.Stderr = e.log
	d.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.Process.Signal(syscall.SIGTERM)
		d.Wait()
		exec.Command(filepath.Join(bin, "roster-box"), "kill", "--all", "--home", e.h.Dir).Run()
		for end := time.Now().Add(time.Minute); time.Now().Before(end) && supervising(e.h.Dir); {
			time.Sleep(50 * time.Millisecond)
		}
		exec.Command(filepath.Join(bin, "roster-box"), "reap", "--cgroups", "--home", e.h.Dir).Run()
	})
	return e
}

// supervising reports whether a roster-box run of the home still runs.
func supervising(dir string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), "roster-box\x00run") && strings.Contains(string(b), dir) {
			return true
		}
	}
	return false
}

func (e *serverEnv) messages(channel string) []*chat.Message {
	rec, _ := chat.Open(e.h.Worker("dobby"), channel)
	lines, err := rec.Read(0)
	if err != nil {
		e.t.Fatal(err)
	}
	return chat.Fold(lines)
}

// A DM from an ordinary XMPP client gets an answer from a real box
// (`roster-task reply`); then the chat server restarts mid-conversation
// and the next DM is answered too (both sides reconnect).
func TestXMPPDMAnsweredAcrossAServerRestart(t *testing.T) {
	if os.Geteuid() != 0 || testing.Short() {
		t.Skip("needs root: boxes are real containers (CI runs as root)")
	}
	srv := chattest.StartProsody(t)
	dobby := srv.AddUser("dobby", "dobby-secret")
	alice := srv.AddUser("alice", "alice-secret")
	// Each answer names its run: across the restart the person's client
	// may hear the first answer twice (delivery is at least once: the
	// server's offline store, the client's archive catch-up), and only a
	// second run's answer shows that the second DM was answered. (CI once
	// counted such a repeat as the second answer and checked the record
	// before the second DM had reached it.)
	e := newServerEnv(t, `roster-task reply "hello from dobby: $(head -c 200 "$ROSTER_BRIEFING" | wc -c) bytes read in $ROSTER_RUN"; roster-task complete answered`,
		fmt.Sprintf("account = \"team\"\nchats = [\"*\"]\nowners = [%q]", alice),
		fmt.Sprintf("[chat.team]\nprotocol = \"xmpp\"\naddress = %q\nserver = %q\ntls = \"starttls\"\nca_file = %q", dobby, srv.Addr, srv.CAFile),
		"dobby-secret")
	a, err := xmpp.New(chat.Config{Account: "alice", Protocol: "xmpp", Address: alice, Server: srv.Addr, TLS: "starttls",
		CAFile: srv.CAFile, Password: "alice-secret", Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	p := startPerson(t, a)
	p.say(t, dobby, "are you there, dobby?")
	m := p.heard(t, "hello from dobby", 90*time.Second)
	if m.From != dobby || !m.Verified {
		t.Fatalf("the answer came from %q verified=%v", m.From, m.Verified)
	}
	ch := "team:" + alice
	waitFor(t, "the message marked answered at the run's end", 60*time.Second, func() bool {
		m := e.messages(ch)
		return len(m) == 2 && m[0].State == chat.Answered
	})
	msgs := e.messages(ch)
	if len(msgs) != 2 || msgs[0].Standing != tms.Owner || msgs[0].State != chat.Answered || msgs[1].State != chat.Sent {
		for _, x := range msgs {
			t.Logf("%+v", x.Line)
		}
		t.Fatalf("record wrong\n%s", e.log)
	}
	list, _ := runs.List(e.h, runs.Filter{Workers: []string{"dobby"}})
	if len(list) != 1 || list[0].Record.Attested != tms.Completed || list[0].Record.Channel != ch {
		t.Fatalf("runs: %+v", list)
	}

	srv.Restart()
	p.say(t, dobby, "still there after the restart?")
	waitFor(t, "the second answer", 120*time.Second, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		answers := map[string]bool{}
		for _, m := range p.got {
			if strings.Contains(m.Text, "hello from dobby") {
				answers[m.Text] = true
			}
		}
		return len(answers) >= 2
	})
	in := 0
	for _, m := range e.messages(ch) {
		if m.Dir == "in" {
			in++
		}
	}
	if in != 2 {
		p.mu.Lock()
		for _, m := range p.got {
			t.Logf("the person heard %+v", m)
		}
		p.mu.Unlock()
		t.Fatalf("want the two messages logged once each, got %d in\n%s", in, e.log)
	}
}

// A DM over IRC (ngircd: no accounts) from a person whose nick is an
// owner's name: answered, but with proactive standing (a nick is never
// verified); and the answer, full of CR, LF, NUL and CTCP bytes, reaches
// the person as clean lines.
func TestIRCNickEqualToOwnerGetsNoOwnerStanding(t *testing.T) {
	if os.Geteuid() != 0 || testing.Short() {
		t.Skip("needs root: boxes are real containers (CI runs as root)")
	}
	srv := chattest.StartNgircd(t)
	e := newServerEnv(t, `roster-task reply "$(printf 'line one\r\nline two\001ACTION x\001\000 end')"; roster-task complete`,
		"account = \"team\"\nchats = [\"*\"]\nowners = [\"alice\"]\nallow = [\"~*\"]",
		fmt.Sprintf("[chat.team]\nprotocol = \"irc\"\naddress = \"dobby@%s\"\ntls = \"off\"\ncredential = []", srv.Addr),
		"")
	a, err := irc.New(chat.Config{Account: "alice", Protocol: "irc", Address: "alice@" + srv.Addr, TLS: "off",
		Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	p := startPerson(t, a)
	p.say(t, "~dobby", "dobby, the build?")
	p.heard(t, "line two", 90*time.Second)
	p.mu.Lock()
	for _, m := range p.got {
		if strings.ContainsAny(m.Text, "\r\n\x00\x01") {
			p.mu.Unlock()
			t.Fatalf("a raw control byte reached the person: %q", m.Text)
		}
	}
	p.mu.Unlock()
	msgs := e.messages("team:~alice")
	if len(msgs) < 1 || msgs[0].From != "~alice" || msgs[0].Verified || msgs[0].Standing != tms.Proactive {
		t.Fatalf("record: %+v\n%s", msgs, e.log)
	}
}

// With the worker's proactive budget spent (its pace of starts used up),
// an owner's DM still runs and is answered, while an allowed
// non-owner's waits late, filed, never failed.
func TestOwnerRunsOnASpentBudgetOthersWait(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	root, _ := filepath.Abs("../..")
	spool := filepath.Join(t.TempDir(), "spool")
	os.MkdirAll(filepath.Join(spool, "in"), 0o700)
	bridge := func(from string) string {
		return fmt.Sprintf("[chat.team]\nprotocol = \"exec\"\ncommand = [%q, %q, \"--from\", %q, %q]",
			py, filepath.Join(root, "contrib", "chat-bridge", "file-bridge"), from, spool)
	}
	// The bridge speaks for one sender at a time: first bob (allowed, not
	// an owner), whose message waits; then alice, the owner.
	e := newServerEnv(t, `roster-task reply "answered"; roster-task complete`,
		"account = \"team\"\nchats = [\"*\"]\nowners = [\"alice\"]\nallow = [\"alice\", \"bob\"]", bridge("bob"), "")
	org0, _ := os.ReadFile(e.h.OrgFile())
	os.WriteFile(e.h.OrgFile(), []byte(strings.Replace(string(org0), "# proactive_starts = 30", "proactive_starts = 1", 1)), 0o644)
	w := e.h.Worker("dobby")
	run := home.NewRunID(time.Now())
	os.MkdirAll(w.Run(run), 0o700)
	end := time.Now()
	if err := runs.WriteRecord(w.Run(run), &runs.Record{ID: run, Worker: "dobby", Standing: tms.Proactive, StartedAt: time.Now(), EndedAt: &end, Ended: "done"}); err != nil {
		t.Fatal(err)
	}
	ce := &chatEnv{t: t, h: e.h, spool: spool}
	ce.say("b1", "bob asks")
	waitFor(t, "bob's message filed", 30*time.Second, func() bool {
		m := e.messages("team:bob")
		return len(m) >= 1 && m[0].State == chat.Filed
	})
	// Now alice: the bridge re-pointed at her as its sender, roster-chat
	// restarted (the dispatcher starts it again).
	org, _ := os.ReadFile(e.h.OrgFile())
	os.WriteFile(e.h.OrgFile(), []byte(strings.Replace(string(org), `"--from", "bob"`, `"--from", "alice"`, 1)), 0o644)
	restartChat(t, e.h)
	ce.say("a1", "alice asks")
	waitFor(t, "alice's message answered", 90*time.Second, func() bool {
		m := e.messages("team:alice")
		return len(m) >= 2 && m[0].State == chat.Answered
	})
	time.Sleep(time.Second)
	var bob tms.Task
	for _, tk := range ce.tasks() {
		if tk.Channel == "team:bob" {
			bob = tk
		}
	}
	if bob.ID == "" || bob.State != tms.Pending {
		t.Fatalf("bob's relay must wait pending (late), not run or fail: %+v\n%s", bob, e.log)
	}
	due := (&chatEnv{t: t, h: e.h}).run("roster-task", "due", "dobby")
	if !strings.Contains(due, "late") {
		t.Fatalf("due should say bob's relay is late:\n%s", due)
	}
	// The conversation was told, once: one notice queued (its delivery
	// may be repeated, marked resent, if roster-chat's restart came
	// mid-send).
	notices := 0
	for _, m := range e.messages("team:bob") {
		if m.Dir == "out" && m.By == "notice" && strings.Contains(m.Text, "used its budget") {
			notices++
		}
	}
	if notices != 1 {
		t.Fatalf("want one budget notice queued, got %d: %v", notices, ce.sent())
	}
}

// restartChat has the dispatcher's roster-chat serve restarted (killed:
// the dispatcher starts it again).
func restartChat(t *testing.T, h home.Home) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), "roster-chat\x00--home\x00"+h.Dir+"\x00serve") {
			var pid int
			fmt.Sscanf(filepath.Base(filepath.Dir(p)), "%d", &pid)
			syscall.Kill(pid, syscall.SIGTERM)
		}
	}
}
