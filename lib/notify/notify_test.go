package notify

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestHookGetsTheRunAndStdinClosed(t *testing.T) {
	n := Run(context.Background(), []string{"/bin/sh", "-c", `read x && echo open || echo "$ROSTER_WORKER $ROSTER_RUN $ROSTER_ATTESTED $ROSTER_REASON"; exit 4`},
		Event{Worker: "w", Run: "r1", Attested: "failed", Reason: "two\nlines"})
	if n.Exit != 4 || n.Output != "w r1 failed two lines" || n.Error != "" {
		t.Fatalf("got %+v", n)
	}
}

func TestHookKilledAtItsBound(t *testing.T) {
	defer func(l time.Duration) { Limit = l }(Limit)
	Limit = 300 * time.Millisecond
	// The grandchild (sleep) shares the group: it is killed too, so the
	// hook's output pipe closes and Run returns.
	n := Run(context.Background(), []string{"/bin/sh", "-c", "echo started; sleep 600; echo never"}, Event{})
	if n.Exit != -1 || !strings.HasPrefix(n.Error, "killed after") || n.Output != "started" {
		t.Fatalf("got %+v", n)
	}
}

func TestHookThatCannotStart(t *testing.T) {
	n := Run(context.Background(), []string{"/nonexistent/hook"}, Event{})
	if n.Exit != -1 || n.Error == "" {
		t.Fatalf("got %+v", n)
	}
	if Run(context.Background(), nil, Event{}) != nil {
		t.Fatal("no hook configured ran something")
	}
}

func TestWanted(t *testing.T) {
	for _, c := range []struct {
		attested, ended string
		want            bool
	}{{"failed", "error", true}, {"", "ceiling", true}, {"completed", "done", false}, {"canceled", "error", false}, {"", "error", false}} {
		if Wanted(c.attested, c.ended) != c.want {
			t.Errorf("Wanted(%q, %q) = %v", c.attested, c.ended, !c.want)
		}
	}
}

func TestTailKeepsTheEnd(t *testing.T) {
	tl := &tail{max: 4}
	tl.Write([]byte("abc"))
	tl.Write([]byte("defg"))
	if tl.String() != "defg" {
		t.Fatalf("got %q", tl.String())
	}
}
