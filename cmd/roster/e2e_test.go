package main

// The end-to-end harness: the suite is built once per `go test` into a temp
// bin folder that goes first on PATH (and is ROSTER_EXEC_PATH), then every
// testdata/script/*.txtar runs against the real binaries.
//
// Custom commands:
//   exits N cmd args...   run cmd, require exit status N (stdout/stderr kept
//                         for the stdout/stderr assertions that follow)
//   snaptake-at AGO W FILE  take a snapshot of worker W of $ROSTER_HOME as if
//                         the clock read AGO (a duration) earlier, as lib/snap's
//                         injectable clock allows; its id goes to FILE
//
// Conditions: [root] (running as root; CI is root, so [!root] skip is only
// for developers' machines).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/roster-sh/roster/internal/testbin"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/snap"
)

var binDir string

func TestMain(m *testing.M) {
	dir, remove := testbin.Temp()
	binDir = dir
	code := m.Run()
	remove()
	os.Exit(code)
}

// repoRoot is two folders up from cmd/roster.
func repoRoot() string {
	wd, _ := os.Getwd()
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

// Params is the testscript setup shared by every e2e test in this package.
func Params(dir string) testscript.Params {
	return testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", binDir+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("ROSTER_EXEC_PATH", binDir)
			env.Setenv("BIN", binDir)
			env.Setenv("REPO", repoRoot())
			env.Setenv("HOME", env.WorkDir)
			env.Setenv("ROSTER_HOME", "")
			env.Defer(func() { sweepCgroups(env.WorkDir) })
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":       cmdExits,
			"snaptake-at": cmdSnapTakeAt,
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "root":
				return os.Geteuid() == 0, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	}
}

// sweepCgroups removes the empty supervisor cgroups the script's boxes
// left (a supervisor exits inside its worker's): `roster-box reap
// --cgroups` for each home in the script's folder, once the supervisors
// `roster-dispatch --once` started for it have exited (for at most a
// minute).
func sweepCgroups(work string) {
	if os.Geteuid() != 0 {
		return
	}
	homes, _ := filepath.Glob(filepath.Join(work, "*", "data", "workers"))
	for _, w := range homes {
		dir := filepath.Dir(filepath.Dir(w))
		for deadline := time.Now().Add(time.Minute); supervising(dir) && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		_ = exec.Command(filepath.Join(binDir, "roster-box"), "reap", "--cgroups", "--home", dir).Run()
	}
}

// supervising reports whether a `roster-box run ... --home dir` (a
// supervisor the dispatcher started) is running.
func supervising(dir string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")
		if len(args) < 2 || filepath.Base(args[0]) != "roster-box" || args[1] != "run" {
			continue
		}
		for i := 2; i+1 < len(args); i++ {
			if args[i] == "--home" && args[i+1] == dir {
				return true
			}
		}
	}
	return false
}

func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits N cmd args...")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: %q is not a number", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		got = ee.ExitCode()
		if got < 0 { // killed by a signal
			got = -1
		}
	default:
		ts.Fatalf("exits: %s: %v", strings.Join(args[1:], " "), err)
	}
	if got != want {
		ts.Fatalf("exits: %s: exit status %d, want %d", strings.Join(args[1:], " "), got, want)
	}
}

func cmdSnapTakeAt(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: snaptake-at AGO WORKER FILE")
	}
	ago, err := time.ParseDuration(args[0])
	if err != nil {
		ts.Fatalf("snaptake-at: %v", err)
	}
	at := time.Now().Add(-ago)
	w := home.Home{Dir: ts.Getenv("ROSTER_HOME")}.Worker(args[1])
	r, err := snap.Take(context.Background(), w, snap.Options{Keep: 1000, Now: func() time.Time { return at }})
	if err != nil {
		ts.Fatalf("snaptake-at: %v", err)
	}
	if r.ID == "" {
		ts.Fatalf("snaptake-at: nothing changed, no snapshot")
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[2]), []byte(r.ID+"\n"), 0o644))
}

func TestScripts(t *testing.T) {
	testscript.Run(t, Params("testdata/script"))
}
