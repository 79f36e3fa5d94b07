package execproto

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/chat"
)

// harness runs the adapter on the test bridge (bridge_test.go).
type harness struct {
	t      *testing.T
	dir    string
	a      *Adapter
	logs   *syncBuffer
	mu     sync.Mutex
	got    []chat.Inbound
	cancel context.CancelFunc
	runErr chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newHarness makes an adapter on the test bridge steered by files (name
// → content) in a fresh folder; it is not running yet.
func newHarness(t *testing.T, files map[string]string) *harness {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	a, err := New(chat.Config{Account: "team", Protocol: "exec", Command: []string{exe, "__bridge__", dir},
		Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	a.backoffMin, a.backoffMax, a.grace = 20*time.Millisecond, 200*time.Millisecond, 2*time.Second
	h := &harness{t: t, dir: dir, a: a, logs: logs}
	t.Cleanup(func() {
		h.stop()
		if t.Failed() {
			t.Logf("adapter log:\n%s", logs.String())
		}
	})
	return h
}

// run starts Run; deliver nil takes every message.
func (h *harness) run(deliver chat.Deliver) {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.runErr = cancel, make(chan error, 1)
	go func() {
		h.runErr <- h.a.Run(ctx, func(ctx context.Context, m chat.Inbound) error {
			if deliver != nil {
				if err := deliver(ctx, m); err != nil {
					return err
				}
			}
			h.mu.Lock()
			h.got = append(h.got, m)
			h.mu.Unlock()
			return nil
		})
	}()
}

// stop cancels Run and says how long it took to return.
func (h *harness) stop() time.Duration {
	if h.cancel == nil {
		return 0
	}
	start := time.Now()
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.runErr:
		if !errors.Is(err, context.Canceled) {
			h.t.Errorf("Run = %v, want context.Canceled", err)
		}
	case <-time.After(15 * time.Second):
		h.t.Fatal("Run did not return 15 s after ctx ended")
	}
	return time.Since(start)
}

func (h *harness) delivered() []chat.Inbound {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]chat.Inbound(nil), h.got...)
}

func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	h.t.Fatalf("timed out waiting for %s", what)
}

func (h *harness) waitDelivered(n int) []chat.Inbound {
	h.t.Helper()
	h.waitFor(fmt.Sprintf("%d messages delivered", n), func() bool { return len(h.delivered()) >= n })
	return h.delivered()
}

// stdinLines is what the bridge has read on its stdin so far.
func (h *harness) stdinLines() []map[string]string {
	b, _ := os.ReadFile(filepath.Join(h.dir, "stdin.log"))
	var out []map[string]string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]string
		if json.Unmarshal([]byte(l), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

func (h *harness) acks() []string {
	var ids []string
	for _, l := range h.stdinLines() {
		if l["type"] == "ack" {
			ids = append(ids, l["id"])
		}
	}
	return ids
}

func (h *harness) starts() int {
	b, _ := os.ReadFile(filepath.Join(h.dir, "starts"))
	n, _ := strconv.Atoi(string(b))
	return n
}

func (h *harness) pid(name string) int {
	h.t.Helper()
	b, err := os.ReadFile(filepath.Join(h.dir, name))
	if err != nil {
		h.t.Fatal(err)
	}
	n, _ := strconv.Atoi(string(b))
	return n
}

// alive tells whether pid is a live process (not gone, not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

func msg(id, chatID, from string, verified bool, text string) string {
	return string(encodeLine(map[string]any{"type": "message", "id": id, "chat": chatID,
		"from": from, "from_verified": verified, "text": text}))
}

func ids(ms []chat.Inbound) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.NetID)
	}
	return out
}

func TestDeliverInOrderAckOnlyAfterDeliverReturnsNil(t *testing.T) {
	var emit strings.Builder
	var want []string
	for i := 1; i <= 20; i++ {
		id := fmt.Sprintf("m%02d", i)
		want = append(want, id)
		emit.WriteString(msg(id, "alice", "alice", true, "hello "+id))
	}
	h := newHarness(t, map[string]string{"emit.1": emit.String()})
	var early []string
	h.run(func(ctx context.Context, m chat.Inbound) error {
		time.Sleep(5 * time.Millisecond) // an early ack would reach the bridge meanwhile
		for _, id := range h.acks() {
			if id == m.NetID {
				early = append(early, id)
			}
		}
		if m.NetID == "m07" {
			return errors.New("disk full")
		}
		return nil
	})
	h.waitFor("m20 acked", func() bool { a := h.acks(); return len(a) > 0 && a[len(a)-1] == "m20" })
	got := ids(h.delivered())
	wantTaken := append(append([]string{}, want[:6]...), want[7:]...)
	if fmt.Sprint(got) != fmt.Sprint(wantTaken) {
		t.Errorf("delivered %v, want %v", got, wantTaken)
	}
	if a := h.acks(); fmt.Sprint(a) != fmt.Sprint(wantTaken) {
		t.Errorf("acks %v, want %v (m07 was not taken)", a, wantTaken)
	}
	if len(early) > 0 {
		t.Errorf("acked before Deliver returned: %v", early)
	}
	if !strings.Contains(h.logs.String(), "not taken") {
		t.Error("the refused delivery was not logged")
	}
}

func TestUnverifiedGetsTildeVerifiedTildeRefused(t *testing.T) {
	h := newHarness(t, map[string]string{"emit.1": msg("1", "bob", "bob", false, "a") +
		msg("2", "~carol", "~carol", false, "b") +
		msg("3", "~mallory", "~mallory", true, "c") +
		msg("4", "alice", "alice", true, "d") +
		`{"type":"message","id":"5","chat":"ops","room":true,"from":"dave","text":"e","at":"2026-05-01T09:30:00+02:00","history":true}` + "\n"})
	h.run(nil)
	got := h.waitDelivered(4)
	type idn struct {
		From     string
		Verified bool
	}
	var who []idn
	for _, m := range got {
		who = append(who, idn{m.From, m.Verified})
	}
	want := []idn{{"~bob", false}, {"~carol", false}, {"alice", true}, {"~dave", false}}
	if fmt.Sprint(who) != fmt.Sprint(want) {
		t.Fatalf("identities %v, want %v (the verified ~mallory refused)", who, want)
	}
	if got[0].Chat != "bob" {
		t.Errorf("chat %q: chat is passed as is", got[0].Chat)
	}
	r := got[3]
	if !r.Room || !r.History || r.Chat != "ops" || !r.At.Equal(time.Date(2026, 5, 1, 7, 30, 0, 0, time.UTC)) {
		t.Errorf("room message = %+v", r)
	}
	if !strings.Contains(h.logs.String(), `a verified identity may not start with`) {
		t.Error("the refused line was not logged")
	}
}

func TestBadLinesSkippedAdapterGoesOn(t *testing.T) {
	huge := msg("big", "alice", "alice", true, "SECRET-3 "+strings.Repeat("x", 2<<20))
	h := newHarness(t, map[string]string{"emit.1": "not json SECRET-0\n" +
		`{"type":"bogus","text":"SECRET-1"}` + "\n" +
		`{"type":"message","chat":"alice","from":"alice","from_verified":true,"text":"SECRET-2"}` + "\n" +
		`{"type":"message","id":7,"chat":"alice","from":"alice","text":"SECRET-4"}` + "\n" +
		`{"type":"message","id":"x","chat":"al\u0007ice","from":"alice","text":"SECRET-5"}` + "\n" +
		`{"type":"message","id":"y","chat":"alice","from":"alice"}` + "\n" +
		`{"type":"message","id":"z","chat":"alice","from":"alice","text":"SECRET-6","at":"yesterday"}` + "\n" +
		huge + "\n\n" +
		`{"type":"sent","ref":"nobody","id":"q"}` + "\n" +
		msg("ok", "alice", "alice", true, "fine")})
	h.run(nil)
	got := h.waitDelivered(1)
	if id, err := h.a.Send(context.Background(), "alice", "still there?"); err != nil || !strings.HasPrefix(id, "net-") {
		t.Fatalf("Send after bad lines = %q, %v", id, err)
	}
	if len(h.delivered()) != 1 || got[0].NetID != "ok" {
		t.Fatalf("delivered %v, want only ok", ids(h.delivered()))
	}
	logs := h.logs.String()
	if n := strings.Count(logs, "line skipped"); n != 8 {
		t.Errorf("%d lines logged as skipped, want 8:\n%s", n, logs)
	}
	for _, w := range []string{"not a JSON object", `unknown type \"bogus\"`, "no id", `field \"id\" has the wrong type`,
		"control character", "without text", "RFC 3339", "longer than", "no Send waits"} {
		if !strings.Contains(logs, w) {
			t.Errorf("log lacks %q", w)
		}
	}
	if strings.Contains(logs, "SECRET") {
		t.Error("a skipped line's text reached the log")
	}
}

func TestSendRoundTripConcurrent(t *testing.T) {
	h := newHarness(t, nil)
	h.run(nil)
	h.waitFor("bridge running", func() bool { h.a.mu.Lock(); defer h.a.mu.Unlock(); return h.a.cur != nil })
	const n = 50
	var wg sync.WaitGroup
	netIDs := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			netIDs[i], errs[i] = h.a.Send(context.Background(), "alice", fmt.Sprintf("reply %d\nwith a newline", i))
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range n {
		if errs[i] != nil || !strings.HasPrefix(netIDs[i], "net-") || seen[netIDs[i]] {
			t.Fatalf("Send %d = %q, %v (ids must be the bridge's, distinct)", i, netIDs[i], errs[i])
		}
		seen[netIDs[i]] = true
	}
	sends := 0
	for _, l := range h.stdinLines() {
		if l["type"] == "send" && l["chat"] == "alice" && strings.HasSuffix(l["text"], "\nwith a newline") && l["ref"] != "" {
			sends++
		}
	}
	if sends != n {
		t.Errorf("bridge read %d whole send lines, want %d", sends, n)
	}
}

func TestSendErrorAnswerAndMissingID(t *testing.T) {
	h := newHarness(t, nil)
	h.run(nil)
	h.waitFor("bridge running", func() bool { h.a.mu.Lock(); defer h.a.mu.Unlock(); return h.a.cur != nil })
	if _, err := h.a.Send(context.Background(), "alice", "refuse"); err == nil || !strings.Contains(err.Error(), "no such chat") {
		t.Errorf("Send with an error answer = %v", err)
	}
	id1, err1 := h.a.Send(context.Background(), "alice", "noid")
	id2, err2 := h.a.Send(context.Background(), "alice", "noid")
	if err1 != nil || err2 != nil || !strings.HasPrefix(id1, "exec-") || id1 == id2 {
		t.Errorf("Sends answered without id = %q %v, %q %v: want distinct made-up ids", id1, err1, id2, err2)
	}
	if _, err := h.a.Send(context.Background(), "", "x"); err == nil {
		t.Error("Send to an empty chat worked")
	}
}

func TestSendFailsFastWhenNotRunning(t *testing.T) {
	h := newHarness(t, nil)
	start := time.Now()
	if _, err := h.a.Send(context.Background(), "alice", "hi"); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Send before Run = %v, want ErrNotRunning", err)
	}
	h.run(nil)
	h.waitFor("bridge running", func() bool { h.a.mu.Lock(); defer h.a.mu.Unlock(); return h.a.cur != nil })
	h.stop()
	if _, err := h.a.Send(context.Background(), "alice", "hi"); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Send after Run = %v, want ErrNotRunning", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestSendTimesOutOnSilence(t *testing.T) {
	h := newHarness(t, nil)
	h.a.sendTimeout = 300 * time.Millisecond
	h.run(nil)
	h.waitFor("bridge running", func() bool { h.a.mu.Lock(); defer h.a.mu.Unlock(); return h.a.cur != nil })
	start := time.Now()
	_, err := h.a.Send(context.Background(), "alice", "silent")
	if d := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || d < 300*time.Millisecond || d > 3*time.Second {
		t.Errorf("Send to a silent bridge = %v after %v, want a deadline after 300ms", err, d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := h.a.Send(ctx, "alice", "silent"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Send bounded by ctx = %v", err)
	}
}

func TestCrashRestartsAndMessagesFlowAgain(t *testing.T) {
	h := newHarness(t, map[string]string{"exit.1": "", "emit.1": msg("m1", "alice", "alice", true, "before"),
		"emit.2": msg("m2", "alice", "alice", true, "after")})
	h.a.backoffMin, h.a.backoffMax = 300*time.Millisecond, time.Second
	start := time.Now()
	h.run(nil)
	got := h.waitDelivered(2)
	if fmt.Sprint(ids(got)) != "[m1 m2]" || h.starts() != 2 {
		t.Fatalf("delivered %v over %d starts, want [m1 m2] over 2", ids(got), h.starts())
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("restarted after %v: no backoff", d)
	}
	if !strings.Contains(h.logs.String(), "exit status 7") {
		t.Error("the exit was not logged with its status")
	}
	// A crash mid-send fails that Send at once, not after SendTimeout.
	t0 := time.Now()
	if _, err := h.a.Send(context.Background(), "alice", "crash"); !errors.Is(err, ErrNotRunning) || time.Since(t0) > 5*time.Second {
		t.Errorf("Send that crashed the bridge = %v after %v", err, time.Since(t0))
	}
	h.waitFor("third start", func() bool { return h.starts() == 3 })
	h.waitFor("Send works again", func() bool {
		id, err := h.a.Send(context.Background(), "alice", "hi")
		return err == nil && strings.HasPrefix(id, "net-")
	})
}

func TestCancelTerminatesBridgeAndItsGroup(t *testing.T) {
	h := newHarness(t, map[string]string{"linger": "", "child": ""})
	h.run(nil)
	h.waitFor("child started", func() bool { _, err := os.Stat(filepath.Join(h.dir, "child.pid")); return err == nil })
	pid, child := h.pid("pid.1"), h.pid("child.pid")
	if d := h.stop(); d > 1500*time.Millisecond {
		t.Errorf("stopping a bridge that obeys SIGTERM took %v", d)
	}
	if alive(pid) {
		t.Error("bridge alive after Run returned")
	}
	// The group's SIGKILL is sent before Run returns; its delivery to the
	// grandchild is the kernel's, a moment later.
	h.waitFor("the bridge's child killed with its group", func() bool { return !alive(child) })
}

func TestCancelKillsAfterGraceWhenSIGTERMIgnored(t *testing.T) {
	h := newHarness(t, map[string]string{"linger": "", "ignore-term": ""})
	h.a.grace = 500 * time.Millisecond
	h.run(nil)
	h.waitFor("bridge started", func() bool { _, err := os.Stat(filepath.Join(h.dir, "stdin.log")); return err == nil })
	pid := h.pid("pid.1")
	d := h.stop()
	if d < 500*time.Millisecond || d > 4*time.Second {
		t.Errorf("Run returned %v after ctx ended, want after the 500ms grace and soon after", d)
	}
	if alive(pid) {
		t.Error("bridge alive after Run returned")
	}
	if !strings.Contains(h.logs.String(), "did not exit on SIGTERM") {
		t.Error("the kill was not logged")
	}
}

func TestBridgeNotReadingStdinIsKilledAndRestarted(t *testing.T) {
	h := newHarness(t, map[string]string{"noread": ""})
	h.a.writeLimit = 300 * time.Millisecond
	h.run(nil)
	h.waitFor("bridge running", func() bool { h.a.mu.Lock(); defer h.a.mu.Unlock(); return h.a.cur != nil })
	_, err := h.a.Send(context.Background(), "alice", strings.Repeat("y", 1<<20)) // more than a pipe holds
	if err == nil {
		t.Fatal("Send to a bridge that does not read worked")
	}
	h.waitFor("restart", func() bool { return h.starts() >= 2 })
	if !strings.Contains(h.logs.String(), "does not read its stdin") {
		t.Error("the kill was not logged")
	}
}

func TestHelloNickAndStderrLogged(t *testing.T) {
	h := newHarness(t, map[string]string{"hello": "dobby-bot",
		"stderr": "bridge says hi\n" + strings.Repeat("z", 10000) + "\nafter the long one\n"})
	if h.a.Nick() != "team" {
		t.Errorf("Nick before hello = %q, want the account name", h.a.Nick())
	}
	h.run(nil)
	h.waitFor("hello", func() bool { return h.a.Nick() == "dobby-bot" })
	h.waitFor("stderr logged", func() bool { return strings.Contains(h.logs.String(), "after the long one") })
	logs := h.logs.String()
	if !strings.Contains(logs, "bridge says hi") || !strings.Contains(logs, "[cut]") || strings.Contains(logs, strings.Repeat("z", maxStderrLine+1)) {
		t.Errorf("stderr not logged line by line, cut at %d:\n%s", maxStderrLine, logs)
	}
}

func TestRunRefusesAMissingProgramAndASecondRun(t *testing.T) {
	if _, err := New(chat.Config{Account: "x"}); err == nil {
		t.Error("New without a command worked")
	}
	a, err := New(chat.Config{Account: "x", Command: []string{filepath.Join(t.TempDir(), "no-such-bridge")}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.Run(ctx, nil); err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "no-such-bridge") {
		t.Errorf("Run of a missing program = %v, want an error at once naming it", err)
	}
	h := newHarness(t, nil)
	h.run(nil)
	h.waitFor("bridge running", func() bool { h.a.mu.Lock(); defer h.a.mu.Unlock(); return h.a.cur != nil })
	if err := h.a.Run(context.Background(), nil); err == nil {
		t.Error("a second Run at once worked")
	}
}

func TestNextWaitDoublesToAMinuteAndStartsOver(t *testing.T) {
	wait := BackoffMin
	var got []time.Duration
	for range 8 {
		wait = nextWait(wait, time.Second, BackoffMin, BackoffMax, Steady)
		got = append(got, wait)
		wait = min(2*wait, BackoffMax)
	}
	if want := "[1s 2s 4s 8s 16s 32s 1m0s 1m0s]"; fmt.Sprint(got) != want {
		t.Errorf("waits %v, want %s", got, want)
	}
	if w := nextWait(BackoffMax, Steady, BackoffMin, BackoffMax, Steady); w != BackoffMin {
		t.Errorf("after a minute's run the wait is %v, want %v", w, BackoffMin)
	}
}
