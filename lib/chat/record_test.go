package chat

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/home"
)

var ctx = context.Background()

func newHome(t testing.TB, specs map[string]string) home.Home {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"data", "workers"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for w, spec := range specs {
		if err := os.WriteFile(filepath.Join(dir, "workers", w+".toml"), []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "data", "workers", w), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	h, err := home.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestAppendNumbersAndReadsBack(t *testing.T) {
	h := newHome(t, map[string]string{"dobby": ""})
	rec, err := Open(h.Worker("dobby"), "team:alice@example.org")
	if err != nil {
		t.Fatal(err)
	}
	got, err := rec.Append(ctx, Line{Dir: "in", From: "alice@example.org", Verified: true, Text: "hi\nthere", NetID: "m1", State: Received})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Seq != 1 || got[0].At.IsZero() {
		t.Fatalf("first line: %+v", got[0])
	}
	if _, err := rec.Append(ctx, Line{Dir: "in", Of: 1, Task: "T1", State: Filed}); err != nil {
		t.Fatal(err)
	}
	lines, err := rec.Read(0)
	if err != nil || len(lines) != 2 || lines[1].Seq != 2 {
		t.Fatalf("read: %v %+v", err, lines)
	}
	msgs := Fold(lines)
	if len(msgs) != 1 || msgs[0].State != Filed || msgs[0].Task != "T1" || msgs[0].Text != "hi\nthere" {
		t.Fatalf("fold: %+v", msgs[0])
	}
	if since, _ := rec.Read(1); len(since) != 1 || since[0].Seq != 2 {
		t.Fatalf("since 1: %+v", since)
	}
	// Mode: the box reads it through a read-only mount.
	if fi, _ := os.Stat(rec.LogFile()); fi.Mode().Perm() != 0o644 {
		t.Fatalf("log mode %v", fi.Mode())
	}
}

func TestTornLastLineIgnoredThenCut(t *testing.T) {
	h := newHome(t, map[string]string{"dobby": ""})
	rec, _ := Open(h.Worker("dobby"), "team:#ops")
	if _, err := rec.Append(ctx, Line{Dir: "in", Text: "one", NetID: "a", State: Context}); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(rec.LogFile(), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"seq":2,"at":"2026-12-07T00:00:00Z","dir":"in","te`)
	f.Close()
	lines, err := rec.Read(0)
	if err != nil || len(lines) != 1 {
		t.Fatalf("torn tail must be ignored: %v %+v", err, lines)
	}
	got, err := rec.Append(ctx, Line{Dir: "in", Text: "two", NetID: "b", State: Context})
	if err != nil || got[0].Seq != 2 {
		t.Fatalf("append after torn tail: %v %+v", err, got)
	}
	data, _ := os.ReadFile(rec.LogFile())
	if strings.Contains(string(data), `"te`+"\n") || strings.Count(string(data), "\n") != 2 {
		t.Fatalf("torn line not cut:\n%s", data)
	}
}

func TestUnreadableLastLineRefused(t *testing.T) {
	h := newHome(t, map[string]string{"dobby": ""})
	rec, _ := Open(h.Worker("dobby"), "team:#ops")
	if _, err := rec.Append(ctx, Line{Dir: "in", Text: "one", NetID: "a", State: Context}); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(rec.LogFile(), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("garbage\n")
	f.Close()
	before, _ := os.ReadFile(rec.LogFile())
	if _, err := rec.Append(ctx, Line{Dir: "in", Text: "two", State: Context}); err == nil {
		t.Fatal("appending after an unreadable line must be refused")
	}
	after, _ := os.ReadFile(rec.LogFile())
	if string(before) != string(after) {
		t.Fatal("a refused append changed the log")
	}
	if _, err := rec.Read(0); err == nil {
		t.Fatal("read must name the unreadable line")
	}
}

func TestOutboxQueueAttemptDeliver(t *testing.T) {
	h := newHome(t, map[string]string{"dobby": ""})
	rec, _ := Open(h.Worker("dobby"), "team:alice@example.org")
	if _, _, err := rec.Queue(ctx, Reply{Text: strings.Repeat("x", MaxReply+1), By: "run"}); err == nil {
		t.Fatal("a reply over 16 KiB must be refused")
	}
	rp, l, err := rec.Queue(ctx, Reply{Text: "hello", Run: "R1", By: "run"})
	if err != nil || l.State != Queued || rp.Chat != "alice@example.org" {
		t.Fatalf("queue: %v %+v %+v", err, l, rp)
	}
	pend, err := rec.Pending()
	if err != nil || len(pend) != 1 || pend[0].MaybeSent() {
		t.Fatalf("pending: %v %+v", err, pend)
	}
	p := pend[0]
	if err := rec.Attempt(&p); err != nil {
		t.Fatal(err)
	}
	// A crash here: the next start finds it marked sending.
	pend, _ = rec.Pending()
	if len(pend) != 1 || !pend[0].MaybeSent() {
		t.Fatalf("after attempt: %+v", pend)
	}
	// Its next attempt fails: it stays a possible duplicate.
	p = pend[0]
	rec.Attempt(&p)
	rec.AttemptFailed(&p, os.ErrDeadlineExceeded, time.Now())
	pend, _ = rec.Pending()
	if len(pend) != 1 || !pend[0].MaybeSent() || pend[0].Sending {
		t.Fatalf("after a failed attempt following a crash: %+v", pend)
	}
	if err := rec.Delivered(ctx, pend[0], "net-1", true); err != nil {
		t.Fatal(err)
	}
	if pend, _ = rec.Pending(); len(pend) != 0 {
		t.Fatalf("delivered entry left: %+v", pend)
	}
	lines, _ := rec.Read(0)
	msgs := Fold(lines)
	if len(msgs) != 1 || msgs[0].State != Resent || msgs[0].NetID != "net-1" || msgs[0].Text != "hello" {
		t.Fatalf("fold: %+v", msgs)
	}
}

func TestAttemptFailedIsNotMaybeSent(t *testing.T) {
	h := newHome(t, map[string]string{"dobby": ""})
	rec, _ := Open(h.Worker("dobby"), "team:alice@example.org")
	rp, _, _ := rec.Queue(ctx, Reply{Text: "hello", By: "operator"})
	rec.Attempt(&rp)
	if err := rec.AttemptFailed(&rp, os.ErrDeadlineExceeded, rp.Queued); err != nil {
		t.Fatal(err)
	}
	pend, _ := rec.Pending()
	if len(pend) != 1 || pend[0].MaybeSent() || pend[0].Attempts != 1 || pend[0].Error == "" {
		t.Fatalf("after a failed attempt: %+v", pend)
	}
	if err := rec.GiveUp(ctx, pend[0], "gave up"); err != nil {
		t.Fatal(err)
	}
	lines, _ := rec.Read(0)
	if m := Fold(lines); m[0].State != Failed {
		t.Fatalf("fold: %+v", m[0])
	}
}
