package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/cgroups"

	"github.com/roster-sh/roster/lib/box"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

// host_memory bounds a supervisor from its first step, not only once its
// box exists: a worker whose partition has grown to ~40 MiB (640 pending
// tasks of 64 KiB: past tms.MaxOpenText now, as a partition filled before
// that bound may be) is read while its
// run is prepared, before any container; with host_memory = 32M the
// kernel ends that supervisor there, while another worker's box, started
// before and running all along, ends as it would have.
func TestSupervisorIsBoundedBeforeItsBoxExists(t *testing.T) {
	f := newFixture(t, []string{"/bin/true"}, `host_memory = "32M"`)
	ctx := context.Background()

	// Another worker, with the default bound, whose box waits for a word.
	if _, err := config.AddWorker(ctx, f.h, config.NewWorker{Name: "winky", Command: []string{"/bin/true"}, Heartbeat: "off", UID: testUID() + 1}); err != nil {
		t.Fatal(err)
	}
	winky := f.h.Worker("winky")
	t.Cleanup(func() {
		for _, w := range []string{"dobby", "winky"} {
			if err := box.RemoveHostCgroup(box.HostCgroupName(f.h.Dir, w)); err != nil {
				t.Error(err)
			}
		}
	})

	// dobby's partition: one real task, then 639 more like it of 64 KiB.
	if _, err := f.part.Add(ctx, tms.NewTask{Text: "first"}); err != nil {
		t.Fatal(err)
	}
	growPartition(t, f.w.TasksFile(), 640)

	exe, _ := os.Executable()
	calm := exec.Command(exe, "run", "winky", "--home", f.h.Dir, "--", "sh", "-c",
		`: > ~/store/started; for i in $(seq 1200); do [ -e ~/store/go ] && exit 0; sleep 0.1; done; exit 9`)
	calm.Env = append(os.Environ(), "ROSTER_BOX_AS_MAIN=1")
	if err := calm.Start(); err != nil {
		t.Fatal(err)
	}
	calmDone := make(chan error, 1)
	go func() { calmDone <- calm.Wait() }()
	calmEnded := false
	t.Cleanup(func() { // on failure: SIGTERM, so its supervisor destroys its box
		if !calmEnded {
			_ = calm.Process.Signal(syscall.SIGTERM)
			<-calmDone
		}
	})
	waitFor(t, func() bool { _, err := os.Stat(filepath.Join(winky.Store(), "started")); return err == nil })

	flood := exec.Command(exe, "run", "dobby", "--home", f.h.Dir, "--", "true")
	flood.Env = append(os.Environ(), "ROSTER_BOX_AS_MAIN=1")
	out, err := flood.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("dobby's supervisor was not ended at its bound while it prepared: %v: %s", err, out)
	}
	// Before its box: no run folder was made, so no container either.
	if ents, err := os.ReadDir(f.w.Runs()); err != nil && !errors.Is(err, os.ErrNotExist) || len(ents) != 0 {
		t.Errorf("dobby's supervisor got as far as a run folder: %v %v", ents, err)
	}
	if n := oomKills(t, f.h.Dir, "dobby"); n < 1 {
		t.Errorf("dobby's supervisor cgroup counts %d OOM kills, want at least 1", n)
	}

	// The other worker was not touched: its box ends as it was told to.
	if err := os.WriteFile(filepath.Join(winky.Store(), "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-calmDone:
		calmEnded = true
		if err != nil {
			t.Fatalf("winky's run: %v", err)
		}
	case <-time.After(3 * time.Minute): // a bound on the test, not a measure
		t.Fatal("winky's run did not end")
	}
	ents, err := os.ReadDir(winky.Runs())
	if err != nil || len(ents) != 1 {
		t.Fatalf("winky's runs: %v %v", ents, err)
	}
	rec, err := runs.ReadRecord(filepath.Join(winky.Runs(), ents[0].Name()))
	if err != nil || rec.Ended != "done" || rec.ExitCode == nil || *rec.ExitCode != 0 {
		t.Fatalf("winky's record: %+v %v", rec, err)
	}
}

// growPartition rewrites tasks.json (as written by tms, at its version)
// with n pending tasks copied from its first, each with a 64 KiB text.
func growPartition(t *testing.T, file string, n int) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var tf tms.File
	if err := json.Unmarshal(data, &tf); err != nil || len(tf.Tasks) != 1 {
		t.Fatalf("tasks.json: %v, %d tasks", err, len(tf.Tasks))
	}
	first := tf.Tasks[0]
	text := strings.Repeat("x", tms.MaxText)
	tf.Tasks = tf.Tasks[:0]
	for i := 0; i < n; i++ {
		tk := first
		tk.ID = fmt.Sprintf("%s-%04d", first.ID, i)
		tk.Text = text
		tf.Tasks = append(tf.Tasks, tk)
	}
	if data, err = json.Marshal(&tf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// oomKills is how many processes the kernel's OOM killer ended in worker's
// supervisor cgroup (v2 memory.events, v1 memory.oom_control).
func oomKills(t *testing.T, homeDir, worker string) int {
	t.Helper()
	dir, err := box.HostCgroupDir(box.HostCgroupName(homeDir, worker))
	if err != nil {
		t.Fatal(err)
	}
	file := "memory.oom_control"
	if cgroups.IsCgroup2UnifiedMode() {
		file = "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var n int
		if _, err := fmt.Sscanf(line, "oom_kill %d", &n); err == nil {
			return n
		}
	}
	t.Fatalf("%s/%s: no oom_kill count: %q", dir, file, b)
	return 0
}
