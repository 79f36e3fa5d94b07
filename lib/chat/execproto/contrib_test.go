package execproto

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/chat"
)

// TestContribFileBridge runs contrib/chat-bridge/file-bridge end to end:
// a file dropped in its spool is delivered, moved to done/ only once
// acked, and a Send lands in sent.jsonl with the bridge's id.
func TestContribFileBridge(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed (Debian: apt-get install python3)")
	}
	bridge, _ := filepath.Abs("../../../contrib/chat-bridge/file-bridge")
	spool := t.TempDir()
	logs := &syncBuffer{}
	a, err := New(chat.Config{Account: "desk", Protocol: "exec",
		Command: []string{py, bridge, "--from", "alice", "--nick", "deskbot", spool},
		Log:     slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan chat.Inbound, 4)
	release := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() {
		runErr <- a.Run(ctx, func(ctx context.Context, m chat.Inbound) error {
			got <- m
			<-release // not yet durable: the file must stay in in/
			return nil
		})
	}()
	defer func() {
		cancel()
		select {
		case <-runErr:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return")
		}
		if t.Failed() {
			t.Logf("adapter log:\n%s", logs.String())
		}
	}()
	in := filepath.Join(spool, "in")
	waitUntil(t, "the spool made", func() bool { _, err := os.Stat(filepath.Join(in, "done")); return err == nil })
	if err := os.WriteFile(filepath.Join(in, "q1.tmp"), []byte("what changed?\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(in, "q1.tmp"), filepath.Join(in, "q1.txt")); err != nil {
		t.Fatal(err)
	}
	var m chat.Inbound
	select {
	case m = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no message from the file bridge")
	}
	if m.From != "alice" || !m.Verified || m.Chat != "alice" || m.Room || m.Text != "what changed?" || !strings.HasPrefix(m.NetID, "q1.txt@") {
		t.Errorf("message = %+v", m)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(in, "q1.txt")); err != nil {
		t.Fatal("the file left in/ before its message was durable")
	}
	close(release)
	waitUntil(t, "q1.txt moved to done/ by the ack", func() bool {
		_, err := os.Stat(filepath.Join(in, "done", "q1.txt"))
		return err == nil
	})
	if a.Nick() != "deskbot" {
		t.Errorf("Nick = %q, want the bridge's hello", a.Nick())
	}
	id, err := a.Send(context.Background(), "alice", "it was the linker\nsee the log")
	if err != nil || !strings.HasPrefix(id, "sent-") {
		t.Fatalf("Send = %q, %v", id, err)
	}
	b, err := os.ReadFile(filepath.Join(spool, "sent.jsonl"))
	var rec map[string]string
	if err != nil || json.Unmarshal(b, &rec) != nil || rec["id"] != id || rec["chat"] != "alice" || rec["text"] != "it was the linker\nsee the log" {
		t.Errorf("sent.jsonl = %q, %v", b, err)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}
