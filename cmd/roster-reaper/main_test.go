package main

// roster-reaper is run as the real program (built as make builds it): it
// takes over the signals and the child-reaping of whatever process runs
// it, so never run() inside the test process.

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roster-sh/roster/internal/testbin"
)

var bin string

func TestMain(m *testing.M) {
	dir, remove := testbin.Temp("roster-reaper")
	bin = filepath.Join(dir, "roster-reaper")
	code := m.Run()
	remove()
	os.Exit(code)
}

// runReaper runs roster-reaper with args and returns its exit status and
// stderr.
func runReaper(t *testing.T, extra []*os.File, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.ExtraFiles = extra
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("roster-reaper %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

func TestItExitsWithTheCommandsStatus(t *testing.T) {
	if code, _ := runReaper(t, nil, "--", "sh", "-c", "exit 3"); code != 3 {
		t.Errorf("exit %d, want the command's 3", code)
	}
	if code, _ := runReaper(t, nil, "--", "true"); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
	if code, stderr := runReaper(t, nil, "--", "/nonexistent/cmd"); code != 127 || !strings.Contains(stderr, "/nonexistent/cmd") {
		t.Errorf("a missing command: exit %d %q, want 127 naming it", code, stderr)
	}
}

func TestTheStatusDescriptorSaysWhichSignalKilledTheCommand(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	code, _ := runReaper(t, []*os.File{w}, "--status-fd=3", "--", "sh", "-c", "kill -TERM $$")
	w.Close()
	said, _ := io.ReadAll(r)
	if code != 128+15 || string(said) != "signal 15\n" {
		t.Errorf("exit %d, status %q; want 143 and \"signal 15\\n\"", code, said)
	}
}

func TestBadArgumentsAreAUsageError(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--"},
		{"true"},
		{"--status-fd=1", "--", "true"},
		{"--status-fd=x", "--", "true"},
		{"--gateway=127.0.0.1:3128", "--", "true"},
		{"--bogus", "--", "true"},
	} {
		code, stderr := runReaper(t, nil, args...)
		if code != 2 || !strings.HasPrefix(stderr, "roster-reaper: ") {
			t.Errorf("roster-reaper %q: exit %d %q, want 2 with a message", args, code, stderr)
		}
	}
}

func TestItsGrammarIsWhatItsPageDocuments(t *testing.T) {
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "ROSTER_DUMP_GRAMMAR=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--status-fd", "--gateway", "--version"} {
		if !strings.Contains(string(out), "roster-reaper\t"+flag+"\n") {
			t.Errorf("grammar %q lacks %s", out, flag)
		}
	}
	help, err := exec.Command(bin, "--help").Output()
	if err != nil || !strings.Contains(string(help), "Usage: roster-reaper") {
		t.Errorf("--help: %v %q", err, help)
	}
}
