package notify

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/roster-sh/roster/lib/cli/out"
	"github.com/roster-sh/roster/lib/runs"
)

// Limit bounds one hook's run.
var Limit = 60 * time.Second

// OutputMax is how much of the hook's output (its tail) is kept.
const OutputMax = 2048

// Event is what the hook is told about a run.
type Event struct {
	Home, Worker, Run, Task string
	Attested                string // failed, or "" for an ad-hoc run
	Ended                   string // done, error, ceiling, idle
	Reason                  string
	WillRetry               bool // an automatic retry of the task follows
}

// ReasonMax bounds ROSTER_REASON (after escaping).
const ReasonMax = 4096

// Wanted reports whether a run that ended so calls for the hook.
func Wanted(attested, ended string) bool {
	return attested == "failed" || ended == "ceiling"
}

// Env is the hook's whole environment: PATH, HOME and LANG of the caller
// (defaults where unset) and the event's variables; nothing else of the
// caller's, whose environment may hold a model key. A value that came
// from a worker (the reason) has its control characters escaped as on a
// screen (\xNN) and is cut at ReasonMax bytes.
func (e Event) Env() []string {
	env := []string{
		"PATH=" + getenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
		"HOME=" + getenv("HOME", "/root"),
		"LANG=" + getenv("LANG", "C.UTF-8"),
	}
	retry := "0"
	if e.WillRetry {
		retry = "1"
	}
	return append(env,
		"ROSTER_HOME="+e.Home, "ROSTER_WORKER="+e.Worker, "ROSTER_RUN="+e.Run,
		// (names and ids are validated: nothing to escape in them)
		"ROSTER_TASK="+e.Task, "ROSTER_ATTESTED="+e.Attested, "ROSTER_ENDED="+e.Ended,
		"ROSTER_REASON="+Reason(e.Reason), "ROSTER_WILL_RETRY="+retry)
}

func getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Reason is a worker's reason made safe for a hook: controls (newlines
// included) escaped, a bad byte escaped, at most ReasonMax bytes, never a
// cut escape or rune.
func Reason(s string) string {
	s = out.Printable(s)
	if len(s) <= ReasonMax {
		return s
	}
	cut := ReasonMax
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	// An escape (\xNN, \uNNNN, \UNNNNNNNN) is never split.
	if i := strings.LastIndexByte(s[max(0, cut-10):cut], '\\'); i >= 0 {
		i += max(0, cut-10)
		if esc := s[i:]; len(esc) > 1 && (esc[1] == 'x' || esc[1] == 'u' || esc[1] == 'U') && i+escLen(esc[1]) > cut {
			cut = i
		}
	}
	return s[:cut]
}

func escLen(c byte) int {
	switch c {
	case 'x':
		return 4
	case 'u':
		return 6
	}
	return 10
}

// Run runs argv for e and reports how it went; it never fails itself (a
// hook that cannot start is reported in the result).
func Run(ctx context.Context, argv []string, e Event) *runs.Notified {
	if len(argv) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, Limit)
	defer cancel()
	out := &tail{max: OutputMax}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = e.Env()
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second // a grandchild holding the output open
	start := time.Now()
	err := cmd.Run()
	n := &runs.Notified{Command: argv, Seconds: time.Since(start).Seconds(), Exit: -1}
	if cmd.ProcessState != nil {
		n.Exit = cmd.ProcessState.ExitCode()
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		n.Error = "killed after " + Limit.String()
	case err != nil && n.Exit <= 0:
		n.Error = err.Error()
	}
	n.Output = strings.TrimRight(out.String(), "\n")
	return n
}

// tail keeps the last max bytes written to it.
type tail struct {
	max int
	b   bytes.Buffer
}

func (t *tail) Write(p []byte) (int, error) {
	t.b.Write(p)
	if over := t.b.Len() - t.max; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

func (t *tail) String() string { return t.b.String() }
