package box

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	_ "github.com/opencontainers/runc/libcontainer/nsenter"

	"github.com/roster-sh/roster/lib/box/reaper"
	"github.com/roster-sh/roster/lib/home"
)

// The test binary is the box's init (runc re-executes it as "init") and
// its reaper (bind-mounted as roster-reaper, run as "--status-fd=3 --").
func init() {
	if len(os.Args) > 1 && os.Args[1] == "init" {
		libcontainer.Init()
	}
	if len(os.Args) > 2 && os.Args[1] == "--status-fd=3" && os.Args[2] == "--" {
		code, err := reaper.Run(os.Args[3:], os.Environ(), 3)
		if err != nil {
			os.Stderr.WriteString("roster-reaper: " + err.Error() + "\n")
		}
		os.Exit(code)
	}
}

const testUID = 200777

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("boxes need root (CI runs as root)")
	}
	if !SeccompBuilt {
		t.Skip("built without -tags seccomp: boxes refuse to start (make test builds with it)")
	}
}

// testSpec lays out a worker's folders in a temp home and returns a Spec.
func testSpec(t *testing.T, cmd ...string) *Spec {
	t.Helper()
	h, _ := home.At(t.TempDir())
	w := h.Worker("tester")
	run := home.NewRunID(time.Now())
	for _, d := range []string{w.Store(), w.Locks(), w.View(), w.Run(run), filepath.Join(w.Run(run), "outbox")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chown(w.Store(), testUID, testUID)
	os.Chmod(w.Locks(), 0o1777)
	os.WriteFile(w.StoreLock(), nil, 0o644)
	os.WriteFile(w.Schedule(), []byte(`{"format":1,"version":1}`), 0o644)
	exe, _ := os.Executable()
	return &Spec{
		Worker: "tester", Run: run, UID: testUID, Command: cmd, Network: "none",
		Memory: 256 << 20, Pids: 128, CPUs: 1,
		Store: w.Store(), Locks: w.Locks(), View: w.View(), Runs: w.Runs(), RunDir: w.Run(run),
		Tools: map[string]string{ReaperTool: exe},
	}
}

// runBox runs s to the end and returns its exit and combined output.
func runBox(t *testing.T, s *Spec) (Exit, string) {
	t.Helper()
	var out bytes.Buffer
	b, err := Launch(context.Background(), s, []byte("# briefing\n"), Stdio{Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatalf("launch: %v", err)
	}
	ex, err := b.Wait()
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	if err := b.Destroy(); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	return ex, out.String()
}

func TestBoxRunsTrue(t *testing.T) {
	needRoot(t)
	ex, out := runBox(t, testSpec(t, "true"))
	if ex.Code != 0 {
		t.Fatalf("exit %d, output %q", ex.Code, out)
	}
}

func TestBoxExitStatusPassesThrough(t *testing.T) {
	needRoot(t)
	ex, out := runBox(t, testSpec(t, "sh", "-c", "echo hi; exit 7"))
	if ex.Code != 7 || strings.TrimSpace(out) != "hi" {
		t.Fatalf("exit %d, output %q", ex.Code, out)
	}
}

// A command killed by a signal is told apart from one that chose the
// same status: pid 1 says so on its status pipe, which the command itself
// never holds.
func TestBoxSignalledCommandIsReportedAsSignal(t *testing.T) {
	needRoot(t)
	ex, out := runBox(t, testSpec(t, "sh", "-c", "kill -TERM $$"))
	if ex.Code != 143 || ex.Signal != "SIGTERM" {
		t.Fatalf("killed by TERM: exit %+v, output %q", ex, out)
	}
	ex, out = runBox(t, testSpec(t, "sh", "-c", "exit 143"))
	if ex.Code != 143 || ex.Signal != "" {
		t.Fatalf("exit 143 by choice: exit %+v, output %q", ex, out)
	}
	ex, out = runBox(t, testSpec(t, "sh", "-c", "if [ -e /proc/$$/fd/3 ]; then echo has-fd-3; else echo no-fd-3; fi"))
	if ex.Code != 0 || strings.TrimSpace(out) != "no-fd-3" {
		t.Fatalf("the command holds pid 1's status pipe: exit %+v, output %q", ex, out)
	}
}
