package main

// The end-to-end harness: the suite is built once per `go test` into a temp
// bin folder that goes first on PATH (and is ROSTER_EXEC_PATH), then every
// testdata/script/*.txtar runs against the real binaries.
//
// Custom commands:
//   exits N cmd args...   run cmd, require exit status N (stdout/stderr kept
//                         for the stdout/stderr assertions that follow)
//
// Conditions: [root] (running as root; CI is root, so [!root] skip is only
// for developers' machines).

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/roster-sh/roster/internal/testbin"
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
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits": cmdExits,
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

func TestScripts(t *testing.T) {
	testscript.Run(t, Params("testdata/script"))
}
