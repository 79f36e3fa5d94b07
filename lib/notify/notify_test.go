package notify

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/roster-sh/roster/lib/cli/out"
)

// The red team's replay: the hook inherited the supervisor's environment
// (a model key in it) and got the worker's escape sequences raw. Now it
// sees PATH, HOME, LANG and ROSTER_* only, the reason escaped and cut.
func TestHookEnvironmentIsClean(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-api03-secret")
	t.Setenv("ROSTER_SOMETHING_ELSE", "x")
	reason := "done\x1b]0;pwned\x07\x1b[2J\r" + strings.Repeat("é", 3000)
	n := Run(context.Background(), []string{"/bin/sh", "-c", `env | cut -d= -f1 | sort | tr '\n' ' '; echo; printf '%s' "$ROSTER_REASON" | wc -c; printf '%s' "$ROSTER_REASON" | head -c 40; echo; echo "$ROSTER_WILL_RETRY"`},
		Event{Home: "/h", Worker: "w", Run: "r1", Task: "t1", Attested: "failed", Ended: "error", Reason: reason, WillRetry: true})
	lines := strings.Split(n.Output, "\n")
	if len(lines) != 4 {
		t.Fatalf("output %q", n.Output)
	}
	names := strings.Fields(lines[0])
	want := []string{"HOME", "LANG", "PATH", "ROSTER_ATTESTED", "ROSTER_ENDED", "ROSTER_HOME", "ROSTER_REASON", "ROSTER_RUN", "ROSTER_TASK", "ROSTER_WILL_RETRY", "ROSTER_WORKER"}
	// sh itself may add PWD, SHLVL and _.
	var got []string
	for _, name := range names {
		if name != "PWD" && name != "SHLVL" && name != "_" && name != "OLDPWD" {
			got = append(got, name)
		}
	}
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("the hook's environment: %v", names)
	}
	if size := strings.TrimSpace(lines[1]); size != "4096" && size != "4095" {
		t.Fatalf("reason of %s bytes", size)
	}
	if !strings.HasPrefix(lines[2], `done\x1b]0;pwned\x07\x1b[2J\x0d`) {
		t.Fatalf("reason %q", lines[2])
	}
	if lines[3] != "1" {
		t.Fatalf("ROSTER_WILL_RETRY=%q", lines[3])
	}
	if env := (Event{}).Env(); env[len(env)-1] != "ROSTER_WILL_RETRY=0" {
		t.Fatal("no retry: ROSTER_WILL_RETRY=0")
	}
}

// The cut at ReasonMax never leaves half an escape: an ESC whose \x1b
// would straddle the bound is left out whole.
func TestReasonCutKeepsEscapesWhole(t *testing.T) {
	for pad := ReasonMax - 6; pad <= ReasonMax; pad++ {
		got := Reason(strings.Repeat("a", pad) + "\x1b" + "tail")
		if strings.HasSuffix(got, `\`) || strings.HasSuffix(got, `\x`) || strings.HasSuffix(got, `\x1`) {
			t.Fatalf("pad %d: cut inside an escape: ...%q", pad, got[len(got)-8:])
		}
		want := ReasonMax // the escape fits, the tail fills the rest
		if pad+4 > ReasonMax {
			want = pad // the escape does not fit: left out whole
		}
		if len(got) != want {
			t.Fatalf("pad %d: %d bytes, want %d", pad, len(got), want)
		}
	}
}

func FuzzReason(f *testing.F) {
	f.Add("plain")
	f.Add("\x1b[31mred\x9b")
	f.Add(strings.Repeat("\x01", 2000))
	f.Add(strings.Repeat("a", 4093) + "\x1b")
	f.Add(strings.Repeat("a", 4094) + "\u202e")
	f.Fuzz(func(t *testing.T, s string) {
		r := Reason(s)
		if len(r) > ReasonMax || !utf8.ValidString(r) {
			t.Fatalf("%q: %d bytes, valid %v", r, len(r), utf8.ValidString(r))
		}
		for _, c := range r {
			if c < 0x20 || c == 0x7f || c >= 0x80 && c < 0xa0 {
				t.Fatalf("a control %U in %q", c, r)
			}
		}
		if p := out.Printable(s); !strings.HasPrefix(p, r) || len(p) <= ReasonMax && p != r {
			t.Fatalf("%q is not the escaped reason %q, cut", r, p)
		}
	})
}

func TestHookGetsTheRunAndStdinClosed(t *testing.T) {
	n := Run(context.Background(), []string{"/bin/sh", "-c", `read x && echo open || echo "$ROSTER_WORKER $ROSTER_RUN $ROSTER_ATTESTED $ROSTER_REASON"; exit 4`},
		Event{Worker: "w", Run: "r1", Attested: "failed", Reason: "two\nlines"})
	if n.Exit != 4 || n.Output != `w r1 failed two\x0alines` || n.Error != "" {
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
