package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roster-sh/roster/lib/tms"
)

// buildProbe builds testdata/probe, static, into the worker's store (the
// box sees it at ~/store/probe).
func (f *fixture) buildProbe() {
	f.t.Helper()
	out := filepath.Join(f.w.Store(), "probe")
	cmd := exec.Command("go", "build", "-o", out, "./testdata/probe")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		f.t.Fatalf("build the probe: %v\n%s", err, b)
	}
}

// The attacks of issue 17 on pid 1 and the syscalls the Containment rules
// deny, replayed from inside a real box: each must be refused, and the
// calls beside them (AF_UNIX sockets, fcntl F_GETFD) must still work.
func TestBoxPid1IsNotDumpableAndContainmentCallsAreDenied(t *testing.T) {
	f := newFixture(t, []string{"/home/worker/store/probe"}, "")
	f.buildProbe()
	rec, _ := f.dispatch(tms.NewTask{Text: "probe pid 1 and seccomp"})
	out := f.transcript(rec.ID)
	want := []string{"pidfd_getfd", "proc1-mem-write", "proc1-mem-read", "proc1-environ", "proc1-fd",
		"io_uring_setup", "io_uring_enter", "io_uring_register", "socket-af-vsock", "socket-af-unix allowed",
		"fcntl-setlease", "fcntl-getfd allowed", "userfaultfd", "perf_event_open", "ptrace-attach-pid1"}
	if strings.Contains(out, "FAIL") || !strings.Contains(out, "probe done") {
		t.Fatalf("probes:\n%s", out)
	}
	for _, w := range want {
		if !strings.Contains(out, "ok "+w) {
			t.Errorf("no %q in the probe's output:\n%s", "ok "+w, out)
		}
	}
	// pid 1 still did its job: the command's exit status came through.
	if rec.ExitCode == nil || *rec.ExitCode != 0 || rec.Signal != "" {
		t.Fatalf("exit %v signal %q:\n%s", rec.ExitCode, rec.Signal, out)
	}
}
