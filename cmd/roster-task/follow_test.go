package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/tms"
)

// TestMain lets a test run this package's main in a child process (the
// real binary's signal and pipe handling).
func TestMain(m *testing.M) {
	if os.Getenv("ROSTER_TASK_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// followChild starts `roster-task journal w --follow` on a home holding
// one journal line, with stdout a pipe, and returns once that line was
// read (the follow loop and its signal handling are running).
func followChild(t *testing.T) (*exec.Cmd, *os.File) {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "data"), 0o700)
	os.MkdirAll(filepath.Join(dir, "workers"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "workers", "w.toml"), []byte("uid = 299999\nheartbeat = \"off\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := home.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tms.Open(h, "w", tms.Options{Worker: &config.Worker{Name: "w"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Add(context.Background(), tms.NewTask{Text: "one"}); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "--home", dir, "journal", "w", "--follow")
	cmd.Env = append(os.Environ(), "ROSTER_TASK_TEST_MAIN=1", "ROSTER_OUTBOX=")
	cmd.Stdout = w
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { cmd.Process.Kill(); r.Close() })
	if _, err := bufio.NewReader(r).ReadString('\n'); err != nil {
		t.Fatalf("first line: %v", err)
	}
	return cmd, r
}

// waitExit waits for the child; a hang is a failure (generous bound, not
// a timing threshold).
func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(60 * time.Second):
		t.Fatal("journal --follow did not end")
		return -1
	}
}

func TestJournalFollowSIGINTExits130(t *testing.T) {
	cmd, _ := followChild(t)
	cmd.Process.Signal(syscall.SIGINT)
	if code := waitExit(t, cmd); code != 130 {
		t.Fatalf("exit %d after SIGINT, want 130", code)
	}
}

func TestJournalFollowSIGTERMExits143(t *testing.T) {
	cmd, _ := followChild(t)
	cmd.Process.Signal(syscall.SIGTERM)
	if code := waitExit(t, cmd); code != 143 {
		t.Fatalf("exit %d after SIGTERM, want 143", code)
	}
}

// TestJournalFollowEndsWhenReaderClosesPipe: `journal --follow | head -1`
// ends when head does, though no new line is ever written.
func TestJournalFollowEndsWhenReaderClosesPipe(t *testing.T) {
	cmd, r := followChild(t)
	r.Close()
	if code := waitExit(t, cmd); code != 141 {
		t.Fatalf("exit %d after the reader went away, want 141", code)
	}
}
