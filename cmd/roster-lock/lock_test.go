package main

// Tests of the real roster-lock binary against real flock(2), real
// processes and real signals. The binary is built once in TestMain. No
// test asserts an upper bound on time; waits poll for a state with a
// generous deadline that only a hang would reach.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/internal/testbin"
)

var bin string // the built roster-lock

func TestMain(m *testing.M) {
	dir, remove := testbin.Temp("roster-lock")
	bin = filepath.Join(dir, "roster-lock")
	code := m.Run()
	remove()
	os.Exit(code)
}

// testHome makes a home with worker w, as `roster worker add` leaves it:
// data/workers/w/{store/.locks, locks (1777, with a root 0644 "store")}.
func testHome(t *testing.T) (homeDir, locks string) {
	t.Helper()
	homeDir = t.TempDir()
	w := filepath.Join(homeDir, "data", "workers", "w")
	locks = filepath.Join(w, "locks")
	for _, d := range []string{filepath.Join(w, "store", ".locks"), locks} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(locks, 0o1777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(locks, "store"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return homeDir, locks
}

type result struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
}

// run runs roster-lock to completion (a minute at most: past that it hung).
func run(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("roster-lock %s: hung (killed after a minute)", strings.Join(args, " "))
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("roster-lock %s: %v", strings.Join(args, " "), err)
	}
	return r
}

func wantCode(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
}

// holder is a roster-lock running in the background.
type holder struct {
	cmd  *exec.Cmd
	done chan error
}

// start runs roster-lock in the background and waits until the command
// has created marker (so the lock is held).
func start(t *testing.T, marker string, args ...string) *holder {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{cmd: cmd, done: make(chan error, 1)}
	go func() { h.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGKILL)
		<-h.done
	})
	waitFor(t, "the holder's command to start", func() bool {
		_, err := os.Stat(marker)
		return err == nil
	})
	return h
}

// wait waits for the holder to exit and returns its exit code.
func (h *holder) wait(t *testing.T) int {
	t.Helper()
	select {
	case err := <-h.done:
		h.done <- err // for the cleanup
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(time.Minute):
		t.Fatal("the holder hung")
	}
	return -1
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// holdIn runs `sh -c 'touch MARKER; exec sleep 600'` under the lock.
func holdArgs(homeDir, marker string, flags ...string) []string {
	args := append([]string{"--home", homeDir, "L", "--worker", "w"}, flags...)
	return append(args, "--", "sh", "-c", "touch "+marker+"; exec sleep 600")
}

func TestExclusiveHoldersExcludeEachOther(t *testing.T) {
	h, _ := testHome(t)
	marker := filepath.Join(t.TempDir(), "in")
	a := start(t, marker, holdArgs(h, marker)...)
	r := run(t, nil, "--home", h, "L", "--worker", "w", "--nonblock", "--", "true")
	wantCode(t, r, 11)
	if !strings.Contains(r.stderr, `lock "L" is held by pid `+strconv.Itoa(a.cmd.Process.Pid)) {
		t.Errorf("busy message does not name the holder %d: %q", a.cmd.Process.Pid, r.stderr)
	}
	// A blocking waiter gets it as soon as the holder is gone.
	b := exec.Command(bin, "--home", h, "L", "--worker", "w", "--", "echo", "second")
	var out bytes.Buffer
	b.Stdout = &out
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	a.cmd.Process.Signal(syscall.SIGTERM)
	if code := a.wait(t); code != 128+int(syscall.SIGTERM) {
		t.Errorf("holder killed by TERM exited %d, want %d", code, 128+int(syscall.SIGTERM))
	}
	if err := b.Wait(); err != nil || out.String() != "second\n" {
		t.Fatalf("waiter: %v, output %q", err, out.String())
	}
}

func TestSharedHoldersCoexistAndExcludeExclusive(t *testing.T) {
	h, _ := testHome(t)
	dir := t.TempDir()
	start(t, dir+"/a", holdArgs(h, dir+"/a", "--shared")...)
	start(t, dir+"/b", holdArgs(h, dir+"/b", "--shared", "--nonblock")...)
	wantCode(t, run(t, nil, "--home", h, "L", "--worker", "w", "-s", "-n", "--", "true"), 0)
	r := run(t, nil, "--home", h, "L", "--worker", "w", "--nonblock", "--", "true")
	wantCode(t, r, 11)

	r = run(t, nil, "--home", h, "--ls", "--worker", "w", "--json")
	wantCode(t, r, 0)
	var got lockInfo
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var in lockInfo
		if err := json.Unmarshal([]byte(line), &in); err != nil {
			t.Fatalf("--ls --json line %q: %v", line, err)
		}
		if in.Name == "L" {
			got = in
		}
	}
	if got.State != "shared" || len(got.Holders) != 2 || got.HeldElsewhere {
		t.Errorf("--ls shows %+v, want shared with two visible holders", got)
	}
}

func TestExclusiveHolderExcludesShared(t *testing.T) {
	h, _ := testHome(t)
	marker := filepath.Join(t.TempDir(), "in")
	start(t, marker, holdArgs(h, marker)...)
	wantCode(t, run(t, nil, "--home", h, "L", "--worker", "w", "--shared", "--nonblock", "--", "true"), 11)
}

func TestNonblockOnHeldLockExits11AtOnce(t *testing.T) {
	h, locks := testHome(t)
	f := holdInProcess(t, locks, "L", unix.LOCK_EX)
	defer f.Close()
	r := run(t, nil, "--home", h, "L", "--worker", "w", "--nonblock", "--", "true")
	wantCode(t, r, 11)
	if !strings.Contains(r.stderr, "roster-lock: error: lock \"L\" is held") {
		t.Errorf("stderr %q does not say the lock is held", r.stderr)
	}
}

// holdInProcess flocks locks/name from the test process itself (another
// open file description: it conflicts with roster-lock like any process).
func holdInProcess(t *testing.T, locks, name string, how int) *os.File {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(locks, name), os.O_RDONLY|os.O_CREATE, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestWaitGivesUpAfterTheDuration(t *testing.T) {
	h, locks := testHome(t)
	f := holdInProcess(t, locks, "L", unix.LOCK_EX)
	defer f.Close()
	r := run(t, nil, "--home", h, "L", "--worker", "w", "--wait", "300ms", "--", "true")
	wantCode(t, r, 11)
	if r.elapsed < 300*time.Millisecond {
		t.Errorf("gave up after %s, before the 300ms wait", r.elapsed)
	}
	if !strings.Contains(r.stderr, "gave up after 300ms") {
		t.Errorf("stderr %q does not say it gave up", r.stderr)
	}
	// A bare number is seconds, as flock -w.
	r = run(t, nil, "--home", h, "L", "--worker", "w", "-w", "0.2", "--", "true")
	wantCode(t, r, 11)
	if r.elapsed < 200*time.Millisecond {
		t.Errorf("-w 0.2 gave up after %s", r.elapsed)
	}
}

func TestWaitTakesTheLockWhenReleased(t *testing.T) {
	h, locks := testHome(t)
	f := holdInProcess(t, locks, "L", unix.LOCK_EX)
	time.AfterFunc(100*time.Millisecond, func() { f.Close() })
	r := run(t, nil, "--home", h, "L", "--worker", "w", "--wait", "1m", "--", "echo", "got it")
	wantCode(t, r, 0)
	if r.stdout != "got it\n" {
		t.Errorf("stdout %q", r.stdout)
	}
}

func TestConflictExitCode(t *testing.T) {
	h, locks := testHome(t)
	f := holdInProcess(t, locks, "L", unix.LOCK_SH)
	defer f.Close()
	wantCode(t, run(t, nil, "--home", h, "L", "--worker", "w", "-n", "--conflict-exit-code", "75", "--", "true"), 75)
	wantCode(t, run(t, nil, "--home", h, "L", "--worker", "w", "-w", "10ms", "-E", "0", "--", "true"), 0)
	wantCode(t, run(t, nil, "--home", h, "L", "--worker", "w", "-n", "-E", "256", "--", "true"), 2)
}

func TestCommandStatusPassesThrough(t *testing.T) {
	h, _ := testHome(t)
	for _, c := range []struct {
		script string
		code   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"exit 255", 255},
		{"kill -KILL $$", 128 + 9},
		{"kill -TERM $$", 128 + 15},
		{"kill -SEGV $$", 128 + 11},
	} {
		r := run(t, nil, "--home", h, "L", "--worker", "w", "--", "sh", "-c", c.script)
		if r.code != c.code {
			t.Errorf("sh -c %q: exit %d, want %d (stderr %q)", c.script, r.code, c.code, r.stderr)
		}
	}
}

func TestCommandNotFoundIs127NotExecutableIs126(t *testing.T) {
	h, _ := testHome(t)
	r := run(t, nil, "--home", h, "L", "--worker", "w", "--", "no-such-command-here")
	wantCode(t, r, 127)
	if !strings.Contains(r.stderr, "no-such-command-here: command not found") {
		t.Errorf("stderr %q", r.stderr)
	}
	plain := filepath.Join(t.TempDir(), "plain")
	os.WriteFile(plain, []byte("echo hi\n"), 0o644)
	wantCode(t, run(t, nil, "--home", h, "L", "--worker", "w", "--", plain), 126)
	wantCode(t, run(t, nil, "--home", h, "L", "--worker", "w", "--", t.TempDir()), 126)
}

func TestLockIsFreeRightAfterHolderIsKilled(t *testing.T) {
	h, _ := testHome(t)
	dir := t.TempDir()
	marker := dir + "/in"
	// The command records its pid so we can see it end too.
	a := start(t, marker, "--home", h, "L", "--worker", "w", "--", "sh", "-c",
		"echo $$ > "+dir+"/pid; touch "+marker+"; exec sleep 600")
	a.cmd.Process.Signal(syscall.SIGKILL)
	a.wait(t)
	wantCode(t, run(t, nil, "--home", h, "L", "--worker", "w", "--nonblock", "--", "true"), 0)

	// And the command, which must not run on outside its lock, got SIGTERM.
	data, _ := os.ReadFile(dir + "/pid")
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("command pid %q: %v", data, err)
	}
	waitFor(t, "the orphaned command to end", func() bool {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return err != nil || isZombie(st)
	})
}

func isZombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

func TestCommandDoesNotInheritTheLock(t *testing.T) {
	h, locks := testHome(t)
	dir := t.TempDir()
	// The command leaves a grandchild behind and exits at once.
	r := run(t, nil, "--home", h, "L", "--worker", "w", "--", "sh", "-c",
		"sleep 600 </dev/null >/dev/null 2>&1 & echo $! > "+dir+"/pid; exit 0")
	wantCode(t, r, 0)
	data, _ := os.ReadFile(dir + "/pid")
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("grandchild pid %q: %v", data, err)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		t.Fatalf("grandchild %d is not running: %v", pid, err)
	}
	wantCode(t, run(t, nil, "--home", h, "L", "--worker", "w", "--nonblock", "--", "true"), 0)

	// Nor does it have any descriptor on the lock file or folder.
	lockFile, _ := filepath.EvalSymlinks(filepath.Join(locks, "L"))
	lockDir, _ := filepath.EvalSymlinks(locks)
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if target == lockFile || target == lockDir {
			t.Errorf("grandchild fd %s is %s", fd.Name(), target)
		}
	}
}

func TestSignalsReachTheCommand(t *testing.T) {
	h, _ := testHome(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP,
		syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2} {
		name := strings.TrimPrefix(unix.SignalName(sig), "SIG")
		t.Run(name, func(t *testing.T) {
			if signal.Ignored(sig) {
				// Under nohup (HUP) or as a shell's background job (INT,
				// QUIT): roster-lock keeps it ignored, as documented.
				t.Skipf("the test was started with SIG%s ignored, and so is roster-lock", name)
			}
			dir := t.TempDir()
			script := fmt.Sprintf(`trap 'echo %s > %s/got; exit 3' %s; touch %s/in; while :; do sleep 0.05; done`,
				name, dir, name, dir)
			a := start(t, dir+"/in", "--home", h, "L"+name, "--worker", "w", "--", "sh", "-c", script)
			a.cmd.Process.Signal(sig)
			if code := a.wait(t); code != 3 {
				t.Errorf("exit %d, want the trap's 3", code)
			}
			if got, _ := os.ReadFile(dir + "/got"); string(got) != name+"\n" {
				t.Errorf("the command's trap wrote %q, want %q", got, name)
			}
		})
	}
}

func TestInvalidNamesAreUsageErrors(t *testing.T) {
	h, locks := testHome(t)
	for _, name := range []string{"../x", "a/b", "", ".hidden", "-x", strings.Repeat("a", 129), "a b", "é"} {
		r := run(t, nil, "--home", h, name, "--worker", "w", "--", "true")
		if r.code != 2 {
			t.Errorf("name %q: exit %d, want 2 (stderr %q)", name, r.code, r.stderr)
		}
	}
	ents, _ := os.ReadDir(locks)
	if len(ents) != 1 {
		t.Errorf("invalid names left files in the lock folder: %v", ents)
	}
	wantCode(t, run(t, nil, "--home", h, "L", "--worker", "Bad/W", "--", "true"), 2)
}

func TestMissingStoreOrWorkerIsExit10(t *testing.T) {
	h, _ := testHome(t)
	r := run(t, nil, "--home", h, "L", "--store", filepath.Join(h, "nope"), "--", "true")
	wantCode(t, r, 10)
	if !strings.Contains(r.stderr, "no store at") {
		t.Errorf("stderr %q", r.stderr)
	}
	wantCode(t, run(t, nil, "--home", h, "L", "--worker", "nobody", "--", "true"), 10)
	wantCode(t, run(t, nil, "--home", t.TempDir(), "L", "--worker", "w", "--", "true"), 10)
	os.RemoveAll(filepath.Join(h, "data", "workers", "w", "locks"))
	wantCode(t, run(t, nil, "--home", h, "L", "--worker", "w", "--", "true"), 10)
}

// TestStoreWithoutLocksFolderGetsOneMade: --store DIR makes DIR/.locks
// when it is missing, as flock(1) makes its lock file; --ls makes nothing.
func TestStoreWithoutLocksFolderGetsOneMade(t *testing.T) {
	h, _ := testHome(t)
	plain := t.TempDir()
	r := run(t, nil, "--home", h, "--ls", "--store", plain)
	wantCode(t, r, 0)
	if _, err := os.Lstat(filepath.Join(plain, ".locks")); !os.IsNotExist(err) {
		t.Fatalf("--ls made .locks (%v)", err)
	}
	wantCode(t, run(t, nil, "--home", h, "L", "--store", plain, "--", "true"), 0)
	fi, err := os.Lstat(filepath.Join(plain, ".locks"))
	if err != nil || !fi.IsDir() {
		t.Fatalf(".locks not made a folder: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(plain, ".locks", "L")); err != nil {
		t.Fatal(err)
	}
	r = run(t, nil, "--home", h, "--ls", "--store", plain)
	if !regexpLine(r.stdout, `^L\s+free`) {
		t.Errorf("--ls:\n%s", r.stdout)
	}
}

// TestSymlinkOrFIFOAtStoreLocksIsRefused: a .locks that is a symlink (to
// a folder or dangling), a FIFO or a file is exit 14 and left as it is;
// nothing is made through the link.
func TestSymlinkOrFIFOAtStoreLocksIsRefused(t *testing.T) {
	h, _ := testHome(t)
	elsewhere := t.TempDir()
	for _, kind := range []string{"symlink", "dangling", "fifo", "file"} {
		t.Run(kind, func(t *testing.T) {
			store := t.TempDir()
			at := filepath.Join(store, ".locks")
			var err error
			switch kind {
			case "symlink":
				err = os.Symlink(elsewhere, at)
			case "dangling":
				err = os.Symlink(filepath.Join(elsewhere, "made"), at)
			case "fifo":
				err = unix.Mkfifo(at, 0o666)
			case "file":
				err = os.WriteFile(at, nil, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			before, _ := os.Lstat(at)
			r := run(t, nil, "--home", h, "L", "--store", store, "--", "true")
			wantCode(t, r, 14)
			if !strings.Contains(r.stderr, "is a symlink or not a folder") {
				t.Errorf("stderr %q", r.stderr)
			}
			wantCode(t, run(t, nil, "--home", h, "--ls", "--store", store), 14)
			after, err := os.Lstat(at)
			if err != nil || after.Mode() != before.Mode() {
				t.Errorf(".locks changed: %v %v", after, err)
			}
			if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
				t.Errorf("made through the link: %v", ents)
			}
		})
	}
}

func TestSymlinkedLockIsRefusedAndTargetUntouched(t *testing.T) {
	h, locks := testHome(t)
	target := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(target, []byte("do not touch\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(target)
	if err := os.Symlink(target, filepath.Join(locks, "L")); err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, "--home", h, "L", "--worker", "w", "--", "touch", filepath.Join(t.TempDir(), "ran"))
	wantCode(t, r, 14)
	if !strings.Contains(r.stderr, "symlink") {
		t.Errorf("stderr %q does not say it is a symlink", r.stderr)
	}
	after, _ := os.Stat(target)
	data, _ := os.ReadFile(target)
	if string(data) != "do not touch\n" || after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("target changed: %q %v", data, after.Mode())
	}
	// A dangling symlink is refused too, and nothing is created at its target.
	os.Remove(filepath.Join(locks, "L"))
	dangling := filepath.Join(t.TempDir(), "made")
	os.Symlink(dangling, filepath.Join(locks, "L"))
	wantCode(t, run(t, nil, "--home", h, "L", "--worker", "w", "--", "true"), 14)
	if _, err := os.Lstat(dangling); err == nil {
		t.Error("a dangling symlink's target was created")
	}
	// --ls shows it as refused, and does not follow it.
	r = run(t, nil, "--home", h, "--ls", "--worker", "w")
	wantCode(t, r, 0)
	if !regexpLine(r.stdout, `^L\s+refused: a symlink`) {
		t.Errorf("--ls:\n%s", r.stdout)
	}
}

func regexpLine(out, re string) bool {
	for _, l := range strings.Split(out, "\n") {
		if ok, _ := regexp.MatchString(re, l); ok {
			return true
		}
	}
	return false
}

func TestFIFOLockIsRefusedWithoutHanging(t *testing.T) {
	h, locks := testHome(t)
	if err := unix.Mkfifo(filepath.Join(locks, "L"), 0o666); err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, "--home", h, "L", "--worker", "w", "--", "true")
	wantCode(t, r, 14)
	if !strings.Contains(r.stderr, "not a regular file") {
		t.Errorf("stderr %q", r.stderr)
	}
	r = run(t, nil, "--home", h, "--ls", "--worker", "w")
	wantCode(t, r, 0)
	if !regexpLine(r.stdout, `^L\s+refused: not a regular file`) {
		t.Errorf("--ls:\n%s", r.stdout)
	}
	// A folder in its place is refused the same way.
	os.Remove(filepath.Join(locks, "L"))
	os.Mkdir(filepath.Join(locks, "L"), 0o755)
	wantCode(t, run(t, nil, "--home", h, "L", "--worker", "w", "--", "true"), 14)
}

func TestMissingLockFileIsCreated0666(t *testing.T) {
	h, locks := testHome(t)
	old := unix.Umask(0o022)
	defer unix.Umask(old)
	wantCode(t, run(t, nil, "--home", h, "fresh", "--worker", "w", "--", "true"), 0)
	fi, err := os.Stat(filepath.Join(locks, "fresh"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != 0o666 {
		t.Errorf("new lock file mode %v, want -rw-rw-rw-", fi.Mode())
	}
	// The pre-created root 0644 store lock is used as it is.
	wantCode(t, run(t, nil, "--home", h, "store", "--worker", "w", "--", "true"), 0)
	if fi, _ := os.Stat(filepath.Join(locks, "store")); fi.Mode() != 0o644 {
		t.Errorf("store lock mode changed to %v", fi.Mode())
	}
}

func TestStoreOfAWorkerMeansItsLockFolder(t *testing.T) {
	h, locks := testHome(t)
	store := filepath.Join(h, "data", "workers", "w", "store")
	f := holdInProcess(t, locks, "L", unix.LOCK_EX)
	wantCode(t, run(t, nil, "--home", h, "L", "--store", store, "--nonblock", "--", "true"), 11)
	// Through a symlink and from another current folder, without --home.
	link := filepath.Join(t.TempDir(), "s")
	os.Symlink(store, link)
	wantCode(t, run(t, nil, "L", "--store", link, "--nonblock", "--", "true"), 11)
	f.Close()
	wantCode(t, run(t, nil, "--home", h, "L2", "--store", store, "--", "true"), 0)
	if _, err := os.Stat(filepath.Join(locks, "L2")); err != nil {
		t.Errorf("lock not made in the worker's locks/: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(store, ".locks")); len(ents) != 0 {
		t.Errorf("lock files made in the store's .locks mount point: %v", ents)
	}
	// A bind mount of the store elsewhere is recognised by its inode (root only).
	if os.Geteuid() == 0 {
		mnt := t.TempDir()
		if err := unix.Mount(store, mnt, "", unix.MS_BIND, ""); err == nil {
			defer unix.Unmount(mnt, unix.MNT_DETACH)
			wantCode(t, run(t, nil, "--home", h, "L3", "--store", mnt, "--", "true"), 0)
			if _, err := os.Stat(filepath.Join(locks, "L3")); err != nil {
				t.Errorf("bind-mounted store: lock not in the worker's locks/: %v", err)
			}
		}
	}
}

func TestInBoxDefaultIsHomeStore(t *testing.T) {
	boxHome := t.TempDir()
	lockDir := filepath.Join(boxHome, "store", ".locks")
	os.MkdirAll(lockDir, 0o777)
	env := []string{"ROSTER_OUTBOX=" + t.TempDir(), "HOME=" + boxHome, "ROSTER_HOME="}
	wantCode(t, run(t, env, "store", "--shared", "--", "true"), 0)
	if _, err := os.Stat(filepath.Join(lockDir, "store")); err != nil {
		t.Errorf("in-box lock not made in $HOME/store/.locks: %v", err)
	}
	// On the host there is no default.
	r := run(t, []string{"ROSTER_OUTBOX=", "HOME=" + boxHome}, "store", "--", "true")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "--worker W or --store DIR") {
		t.Errorf("stderr %q", r.stderr)
	}
}

func TestUsageErrors(t *testing.T) {
	h, _ := testHome(t)
	for _, args := range [][]string{
		{"L", "--worker", "w"},                                 // no command
		{"L", "--worker", "w", "--store", "/", "--", "true"},   // both folders
		{"L", "--worker", "w", "-n", "-w", "1s", "--", "true"}, // both waits
		{"L", "--worker", "w", "-w", "-1s", "--", "true"},      // negative wait
		{"L", "--worker", "w", "-w", "soon", "--", "true"},     // not a duration
		{"--ls", "L", "--worker", "w"},                         // --ls with a name
		{"L", "--worker", "w", "--json", "--", "true"},         // --json without --ls
		{"L", "--worker", "w", "--bogus", "--", "true"},        // unknown flag
	} {
		r := run(t, nil, append([]string{"--home", h}, args...)...)
		if r.code != 2 {
			t.Errorf("%q: exit %d, want 2 (stderr %q)", args, r.code, r.stderr)
		}
	}
}

func TestLsShowsStateAndHolders(t *testing.T) {
	h, locks := testHome(t)
	dir := t.TempDir()
	a := start(t, dir+"/a", "--home", h, "busy", "--worker", "w", "--", "sh", "-c", "touch "+dir+"/a; exec sleep 600")
	os.WriteFile(filepath.Join(locks, ".hidden"), nil, 0o644) // not a lock name: not listed
	r := run(t, nil, "--home", h, "--ls", "--worker", "w")
	wantCode(t, r, 0)
	pid := strconv.Itoa(a.cmd.Process.Pid)
	for _, re := range []string{`^NAME\s+STATE\s+HOLDERS\s+WAITING$`, `^busy\s+held exclusive\s+` + pid + `\s+0$`, `^store\s+free\s+-\s+0$`} {
		if !regexpLine(r.stdout, re) {
			t.Errorf("--ls has no line %s:\n%s", re, r.stdout)
		}
	}
	if strings.Contains(r.stdout, ".hidden") {
		t.Errorf("--ls lists a name no lock can have:\n%s", r.stdout)
	}
	// A waiter shows up as waiting.
	w := exec.Command(bin, "--home", h, "busy", "--worker", "w", "--", "true")
	w.Start()
	defer func() { w.Process.Kill(); w.Wait() }()
	waitFor(t, "the waiter in /proc/locks", func() bool {
		r := run(t, nil, "--home", h, "--ls", "--worker", "w", "--json")
		return strings.Contains(r.stdout, `"waiting":1`)
	})
	r = run(t, nil, "--home", h, "--ls", "--worker", "w", "--json")
	want := `{"name":"busy","state":"exclusive","holders":[` + pid + `],"held_elsewhere":false,"waiting":1}`
	if !strings.Contains(r.stdout, want+"\n") || !strings.Contains(r.stdout, `{"name":"store","state":"free","holders":[],"held_elsewhere":false,"waiting":0}`) {
		t.Errorf("--ls --json:\n%s\nwant a line %s", r.stdout, want)
	}
}

// TestLsInsideAPidNamespaceSaysHeldElsewhere runs --ls in a new pid
// namespace with its own /proc, as inside a box: the holder outside is
// hidden from /proc/locks there, and the probe still sees the lock.
func TestLsInsideAPidNamespaceSaysHeldElsewhere(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare --pid --mount-proc")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1)")
	}
	h, locks := testHome(t)
	f := holdInProcess(t, locks, "L", unix.LOCK_SH)
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--ls", "--worker", "w", "--json"}, `{"name":"L","state":"shared","holders":[],"held_elsewhere":true,"waiting":0}`},
		{[]string{"--ls", "--worker", "w"}, "L      held shared  elsewhere  0"},
	} {
		cmd := exec.CommandContext(ctx, unshare, append([]string{"--pid", "--fork", "--mount-proc", bin, "--home", h}, c.args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Skipf("unshare: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), c.want) {
			t.Errorf("in a pid namespace, %v:\n%s\nwant %s", c.args, out, c.want)
		}
	}
	// And a busy lock there says who holds it, as far as it can.
	cmd := exec.CommandContext(ctx, unshare, "--pid", "--fork", "--mount-proc", "env", "ROSTER_OUTBOX=x",
		bin, "--home", h, "L", "--worker", "w", "-n", "--", "true")
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), `lock "L" is held by a process outside this box`) {
		t.Errorf("busy in a box: %s", out)
	}
}

// TestSignalWhileWaitingEndsRosterLock: a signal before the command starts
// ends roster-lock with 128+N, and the command never runs.
func TestSignalWhileWaitingEndsRosterLock(t *testing.T) {
	h, locks := testHome(t)
	f := holdInProcess(t, locks, "L", unix.LOCK_EX)
	defer f.Close()
	ran := filepath.Join(t.TempDir(), "ran")
	cmd := exec.Command(bin, "--home", h, "L", "--worker", "w", "--", "touch", ran)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "roster-lock to wait in /proc/locks", func() bool {
		hs, _ := os.ReadFile("/proc/locks")
		return strings.Contains(string(hs), fmt.Sprintf("-> FLOCK  ADVISORY  WRITE %d ", cmd.Process.Pid))
	})
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGTERM) {
		t.Errorf("TERM while waiting: %v, want exit %d", err, 128+int(syscall.SIGTERM))
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the command ran")
	}
}
