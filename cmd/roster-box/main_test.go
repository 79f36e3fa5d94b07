package main

// These tests run real boxes (root, cgroups): the test binary is the
// container's init (main.go's init), and, with ROSTER_BOX_AS_MAIN=1, a
// separate roster-box supervisor process. The static roster-task,
// roster-lock and roster-reaper are built once into a temp folder named by
// ROSTER_EXEC_PATH.

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/internal/testbin"
	"github.com/roster-sh/roster/lib/box"
	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

func TestMain(m *testing.M) {
	if os.Getenv("ROSTER_BOX_AS_MAIN") == "1" || len(os.Args) == 3 && os.Args[1] == box.GitHookCommand {
		main()
		return
	}
	// The test process runs roster-box in-process and lives on after each
	// run: it leaves the worker's host cgroup (the fixture removes it).
	afterRun = func(cg *box.HostCgroup) { _ = cg.MoveBack() }
	if os.Geteuid() == 0 {
		dir, remove := testbin.Temp("roster-task", "roster-lock", "roster-reaper")
		os.Setenv("ROSTER_EXEC_PATH", dir)
		os.Setenv("ROSTER_BOX_GRACE", "1s")
		code := m.Run()
		remove()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("boxes need root and cgroups (CI runs as root)")
	}
}

// fixture is a home with one worker, dobby.
type fixture struct {
	t    *testing.T
	h    home.Home
	w    home.Worker
	uid  int
	part *tms.Partition
}

func newFixture(t *testing.T, command []string, extra string) *fixture {
	t.Helper()
	needRoot(t)
	h, _ := home.At(t.TempDir())
	if err := h.InitData(); err != nil {
		t.Fatal(err)
	}
	// Last: the supervisors exit inside the worker's host cgroup, which
	// stays, empty, for the next run or a reap.
	t.Cleanup(func() { _, _ = box.RemoveIdleHostCgroups(h.Dir) })
	spec, err := config.AddWorker(context.Background(), h, config.NewWorker{Name: "dobby", Command: command, Heartbeat: "off", UID: testUID()})
	if err != nil {
		t.Fatal(err)
	}
	if extra != "" {
		f, _ := os.OpenFile(h.SpecFile("dobby"), os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString("\n" + extra + "\n")
		f.Close()
	}
	part, err := tms.Open(h, "dobby", tms.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, h: h, w: h.Worker("dobby"), uid: spec.UID, part: part}
}

// box runs roster-box in-process and returns its exit status and output.
func (f *fixture) box(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	env := &cli.Env{Name: "roster-box", Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Ctx: context.Background()}
	code := cli.MainEnv(env, &CLI{}, append([]string{"--home", f.h.Dir}, args...))
	return code, out.String(), errb.String()
}

// claim files a task (by the owner) and claims it for a new run.
func (f *fixture) claim(nt tms.NewTask) (task, run string) {
	f.t.Helper()
	ctx := context.Background()
	tk, err := f.part.Add(ctx, nt)
	if err != nil {
		f.t.Fatal(err)
	}
	run = home.NewRunID(time.Now())
	if _, err := f.part.Claim(ctx, tk.ID, run); err != nil {
		f.t.Fatal(err)
	}
	return tk.ID, run
}

// dispatch runs a claimed task's box as the dispatcher would.
func (f *fixture) dispatch(nt tms.NewTask) (*runs.Record, string) {
	f.t.Helper()
	task, run := f.claim(nt)
	code, _, errb := f.box("run", "dobby", "--task", task, "--run", run)
	if code != 0 {
		f.t.Fatalf("roster-box run --task: exit %d: %s", code, errb)
	}
	rec, err := runs.ReadRecord(f.w.Run(run))
	if err != nil {
		f.t.Fatal(err)
	}
	return rec, task
}

func (f *fixture) transcript(run string) string {
	data, _ := os.ReadFile(home.Transcript(f.w.Run(run)))
	return string(data)
}

// lastRun is the newest run's record (by start time: two runs in one
// second do not sort by name).
func (f *fixture) lastRun() *runs.Record {
	f.t.Helper()
	ents, _ := os.ReadDir(f.w.Runs())
	var last *runs.Record
	for _, e := range ents {
		rec, err := runs.ReadRecord(filepath.Join(f.w.Runs(), e.Name()))
		if err != nil {
			f.t.Fatal(err)
		}
		if last == nil || rec.StartedAt.After(last.StartedAt) {
			last = rec
		}
	}
	if last == nil {
		f.t.Fatal("no run folder")
	}
	return last
}

// testUID is a box uid no other test on this machine uses at the same time
// (other packages' workers take the lowest free uid from 200000).
func testUID() int { return 270000 + os.Getpid()%20000 }
