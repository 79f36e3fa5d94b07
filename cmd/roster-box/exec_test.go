package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/box"
	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/tms"
)

// liveBox starts a run whose box sleeps, as the dispatcher would, and
// returns its run id; the box is killed when the test ends.
func (f *fixture) liveBox() string {
	f.t.Helper()
	f.setJob("sleep 1000")
	task, run := f.claim(tms.NewTask{Text: "stay up"})
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "run", "dobby", "--home", f.h.Dir, "--task", task, "--run", run)
	cmd.Env = append(os.Environ(), "ROSTER_BOX_AS_MAIN=1")
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { f.box("kill", run); cmd.Wait() })
	waitFor(f.t, func() bool { return box.Running(run) })
	return run
}

// holders are the host pids, other than this test's, that hold an open
// descriptor of the same file as f.
func holders(t *testing.T, f *os.File) []string {
	t.Helper()
	var want unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &want); err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	var found []string
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		pid := strings.Split(fd, "/")[2]
		if pid == strconv.Itoa(self) {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(fd, &st) == nil && st.Dev == want.Dev && st.Ino == want.Ino && st.Rdev == want.Rdev {
			found = append(found, fd)
		}
	}
	return found
}

// leftBehind is what a subverted exec'd command leaves in the box: a
// process keeping the descriptors it was given, which, after the exec has
// returned, reads what the operator types (into store/stolen) and writes
// to their screen. (Its stdin is named by a copy: sh gives a background
// job /dev/null otherwise.)
const leftBehind = `exec 4<&0; ( trap "" HUP; sleep 1; while :; do if read -r l; then echo "$l" >> ~/store/stolen; fi; echo LEAK-AFTER-EXEC; echo LEAK-AFTER-EXEC >&2; sleep 0.1; done ) <&4 &`

// probeExec says what the exec'd command is and has: its terminal, its
// seccomp mode, no_new_privs, its cgroup against the box's pid 1, and
// whether its parent, the process exec started, is dumpable (a
// non-dumpable process's environ and mem cannot be opened by the same uid;
// the control: a dumpable child's environ can).
const probeExec = `if test -t 0 && test -t 1; then echo "tty=yes size=$(stty size)"; else echo tty=no; fi
grep '^Seccomp:' /proc/self/status | tr -d '\t '
grep '^NoNewPrivs:' /proc/self/status | tr -d '\t '
[ "$(cat /proc/self/cgroup)" = "$(cat /proc/1/cgroup)" ] && echo cgroup=box
cat /proc/$PPID/environ >/dev/null 2>&1 || echo parent-environ=denied
( exec 3<>/proc/$PPID/mem ) 2>/dev/null || echo parent-mem=denied
sleep 5 & cat /proc/$!/environ >/dev/null 2>&1 && echo control-environ=readable; kill $!
`

// checkProbe asserts what probeExec printed.
func checkProbe(t *testing.T, out string, tty string) {
	t.Helper()
	for _, want := range []string{tty, "Seccomp:2", "NoNewPrivs:1", "cgroup=box",
		"parent-environ=denied", "parent-mem=denied", "control-environ=readable"} {
		if !strings.Contains(out, want) {
			t.Errorf("exec'd command: no %q in its output:\n%s", want, out)
		}
	}
}

// TestExecTerminalIsMadeInTheBox replays the red team's terminal attack
// (Containment, "Terminals"): exec -t from an operator's terminal (a real
// pty made here) gets a pty made inside the box, of the terminal's size;
// the terminal's mode is restored; and once exec has returned, the
// process the command left behind holds no descriptor of the operator's
// terminal, never reads a keystroke typed into it and never writes to it.
func TestExecTerminalIsMadeInTheBox(t *testing.T) {
	f := newFixture(t, job, "")
	run := f.liveBox()
	m, s := openPty(t)
	unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 41, Col: 117})
	before, _ := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
	screen := make(chan string, 1024)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := m.Read(buf)
			if n > 0 {
				screen <- string(buf[:n])
			}
			if err != nil {
				close(screen)
				return
			}
		}
	}()
	env := &cli.Env{Name: "roster-box", Stdin: s, Stdout: s, Stderr: s, Ctx: context.Background()}
	code := cli.MainEnv(env, &CLI{}, []string{"--home", f.h.Dir, "exec", "-t", run, "--", "sh", "-c", probeExec + leftBehind + "\nexit 5"})
	if code != 5 {
		t.Fatalf("exec -t: exit %d, want 5", code)
	}
	var out strings.Builder
	for quiet := time.After(300 * time.Millisecond); ; {
		select {
		case c := <-screen:
			out.WriteString(c)
			continue
		case <-quiet:
		}
		break
	}
	checkProbe(t, out.String(), "tty=yes size=41 117")
	if after, _ := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS); *after != *before {
		t.Error("the operator's terminal mode was not restored after exec -t")
	}
	if h := holders(t, s); len(h) > 0 {
		t.Errorf("after exec returned, other processes hold the operator's terminal: %v", h)
	}
	// The operator types on; the process left behind tries for 2 s.
	m.Write([]byte("operator-secret-1\r"))
	deadline := time.After(2500 * time.Millisecond)
	var later strings.Builder
	for done := false; !done; {
		select {
		case c := <-screen:
			later.WriteString(c)
		case <-time.After(500 * time.Millisecond):
			m.Write([]byte("operator-secret-2\r"))
		case <-deadline:
			done = true
		}
	}
	if strings.Contains(later.String(), "LEAK") {
		t.Errorf("a box process wrote to the operator's terminal after exec returned: %q", later.String())
	}
	if data, err := os.ReadFile(filepath.Join(f.w.Store(), "stolen")); err == nil && strings.Contains(string(data), "operator-secret") {
		t.Errorf("a box process read the operator's keystrokes after exec returned: %q", data)
	}
	if h := holders(t, s); len(h) > 0 {
		t.Errorf("other processes hold the operator's terminal: %v", h)
	}
	checkExecLog(t, f, run, "sh", 5, true)
}

// TestExecWithoutATerminalGetsPipes: without -t, even from a terminal, the
// command gets pipes (no terminal, and no descriptor of the operator's),
// its output reaches the operator, its status comes back, and a process
// it leaves behind writing on does not hold the exec open.
func TestExecWithoutATerminalGetsPipes(t *testing.T) {
	f := newFixture(t, job, "")
	run := f.liveBox()
	_, s := openPty(t)
	var stdout, stderr bytes.Buffer
	env := &cli.Env{Name: "roster-box", Stdin: s, Stdout: &stdout, Stderr: &stderr, Ctx: context.Background()}
	// Returning at all is the check that the process left behind, writing
	// on, does not hold the exec open (the drain's bound).
	code := cli.MainEnv(env, &CLI{}, []string{"--home", f.h.Dir, "exec", run, "--", "sh", "-c",
		probeExec + "echo to-stderr >&2\n" + leftBehind + "\nexit 7"})
	if code != 7 {
		t.Fatalf("exec: exit %d, want 7: %s", code, stderr.String())
	}
	checkProbe(t, stdout.String(), "tty=no")
	if !strings.Contains(stderr.String(), "to-stderr") || strings.Contains(stdout.String(), "to-stderr") {
		t.Errorf("stderr %q stdout %q: stderr not kept apart", stderr.String(), stdout.String())
	}
	if h := holders(t, s); len(h) > 0 {
		t.Errorf("box processes hold the operator's terminal: %v", h)
	}
	// Stdin reaches the command through a pipe; a signal's status is told.
	var out bytes.Buffer
	env = &cli.Env{Name: "roster-box", Stdin: strings.NewReader("through-a-pipe\n"), Stdout: &out, Stderr: &out, Ctx: context.Background()}
	if code := cli.MainEnv(env, &CLI{}, []string{"--home", f.h.Dir, "exec", run, "--", "sh", "-c", `read l; echo "got $l"; kill -TERM $$`}); code != 128+15 {
		t.Fatalf("exec killed by SIGTERM: exit %d, want 143: %s", code, out.String())
	}
	if !strings.Contains(out.String(), "got through-a-pipe") {
		t.Errorf("stdin did not reach the command: %q", out.String())
	}
	recs := execLog(t, f, run)
	if last := recs[len(recs)-1]; last.Signal != "SIGTERM" || last.Exit == nil || *last.Exit != 143 {
		t.Errorf("exec.jsonl's last line %+v: want SIGTERM, exit 143", last)
	}
}

func execLog(t *testing.T, f *fixture, run string) []box.ExecRecord {
	t.Helper()
	data, err := os.ReadFile(home.ExecLog(f.w.Run(run)))
	if err != nil {
		t.Fatal(err)
	}
	var recs []box.ExecRecord
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r box.ExecRecord
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("exec.jsonl line %q: %v", l, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// checkExecLog asserts exec.jsonl's two lines for one exec.
func checkExecLog(t *testing.T, f *fixture, run, argv0 string, exit int, terminal bool) {
	t.Helper()
	recs := execLog(t, f, run)
	if len(recs) != 2 || recs[0].Exit != nil || recs[1].Exit == nil || *recs[1].Exit != exit ||
		recs[1].Argv[0] != argv0 || recs[1].Terminal != terminal {
		t.Errorf("exec.jsonl %+v", recs)
	}
}
