package box

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/cgroups"

	"github.com/roster-sh/roster/lib/home"
)

// testHome is the home the host cgroup tests name their supervisor
// cgroups after: one per test process (its children inherit it through
// the environment), so that a sweep in one run of these tests never
// removes the cgroups of another run on the same machine (two at once
// failed TestHostCgroupSupervisorsComeAndGoAtOnce: its sweep removed the
// other run's hcg-flood cgroup).
var testHome = func() string {
	const env = "ROSTER_TEST_HOSTCG_HOME"
	if h := os.Getenv(env); h != "" {
		return h
	}
	h := "/test-home-" + strconv.Itoa(os.Getpid())
	os.Setenv(env, h)
	return h
}()

// The supervisor's host cgroup, with real processes in real cgroups: a
// child of this test joins a worker's supervisor cgroup bounded at 64 MiB
// (what roster-box run does once its box's container is made) and then
// floods memory, as a flood of actions or a walk of a store of many files
// would; the kernel ends it at the bound, while another worker's
// supervisor, holding its own 16 MiB in its own cgroup, runs on untouched.

const hostcgChild = "ROSTER_TEST_HOSTCG_CHILD" // "WORKER BOUND ALLOC"

// TestHostCgroupChild is the child's body; it runs only when re-executed.
func TestHostCgroupChild(t *testing.T) {
	arg := os.Getenv(hostcgChild)
	if arg == "" {
		t.Skip("the child of TestHostCgroupBoundsOneWorker")
	}
	var worker string
	var bound, alloc int64
	if _, err := fmt.Sscan(arg, &worker, &bound, &alloc); err != nil {
		fmt.Println("bad args:", err)
		os.Exit(2)
	}
	cg, err := JoinHostCgroup(HostCgroupName(testHome, worker), bound, 0)
	if err != nil {
		fmt.Println("join:", err)
		os.Exit(3)
	}
	fmt.Println("joined", cg.Path)
	var held [][]byte
	for n := int64(0); n < alloc; n += 1 << 20 {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1 // touched: resident, charged to the cgroup
		}
		held = append(held, b)
	}
	fmt.Println("allocated", len(held), "MiB")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the parent says
	os.Exit(0)
}

type hostcgProc struct {
	cmd  *exec.Cmd
	in   *os.File
	out  *bufio.Reader
	path string
}

func startHostcgChild(t *testing.T, worker string, bound, alloc int64) *hostcgProc {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostCgroupChild$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d", hostcgChild, worker, bound, alloc))
	cmd.Stdin = r
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	p := &hostcgProc{cmd: cmd, in: w, out: bufio.NewReader(stdout)}
	line, err := p.out.ReadString('\n')
	path, ok := strings.CutPrefix(strings.TrimSpace(line), "joined ")
	if err != nil || !ok {
		w.Close()
		_ = cmd.Wait()
		t.Fatalf("child %s did not join its cgroup: %q %v", worker, line, err)
	}
	p.path = path
	t.Cleanup(func() {
		w.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if err := RemoveHostCgroup(HostCgroupName(testHome, worker)); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("supervisor cgroup %s left behind: %v", path, err)
		}
	})
	return p
}

// memoryBound reads the cgroup's memory limit (v2 memory.max, v1
// memory.limit_in_bytes).
func memoryBound(t *testing.T, path string) int64 {
	t.Helper()
	file := "memory.limit_in_bytes"
	if cgroups.IsCgroup2UnifiedMode() {
		file = "memory.max"
	}
	b, err := os.ReadFile(filepath.Join(path, file))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %q", file, b)
	}
	return n
}

// inCgroup reports whether pid is listed in the cgroup at path.
func inCgroup(t *testing.T, path string, pid int) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(b)) {
		if f == strconv.Itoa(pid) {
			return true
		}
	}
	return false
}

func TestHostCgroupBoundsOneWorker(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	const bound = 64 << 20
	tag := strconv.Itoa(os.Getpid())

	// Another worker's supervisor: 16 MiB held in its own bounded cgroup.
	calm := startHostcgChild(t, "hcg-calm-"+tag, bound, 16<<20)
	if line, err := calm.out.ReadString('\n'); err != nil || !strings.HasPrefix(line, "allocated 16 ") {
		t.Fatalf("calm child: %q %v", line, err)
	}
	if !strings.HasSuffix(calm.path, "/roster/"+HostCgroupName(testHome, "hcg-calm-"+tag)) {
		t.Errorf("calm child's cgroup %s is not roster/%s", calm.path, HostCgroupName(testHome, "hcg-calm-"+tag))
	}
	if got := memoryBound(t, calm.path); got != bound {
		t.Errorf("memory bound of %s = %d, want %d", calm.path, got, bound)
	}
	if !inCgroup(t, calm.path, calm.cmd.Process.Pid) {
		t.Errorf("calm child %d is not in %s", calm.cmd.Process.Pid, calm.path)
	}

	// The flooding worker's supervisor asks for 4x its bound: the kernel
	// ends it (SIGKILL, the cgroup's OOM killer), at the bound.
	flood := startHostcgChild(t, "hcg-flood-"+tag, bound, 4*bound)
	if !inCgroup(t, flood.path, flood.cmd.Process.Pid) {
		t.Errorf("flooding child %d is not in %s", flood.cmd.Process.Pid, flood.path)
	}
	if got := memoryBound(t, flood.path); got != bound {
		t.Errorf("memory bound of %s = %d, want %d", flood.path, got, bound)
	}
	t.Logf("cgroups: %s, %s", calm.path, flood.path)
	line, _ := flood.out.ReadString('\n')
	err := flood.cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the flood was not ended at its bound: printed %q, wait: %v", line, err)
	}

	// The other worker's supervisor is untouched: alive, its memory held.
	if err := calm.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the calm child is gone: %v", err)
	}
	calm.in.Close()
	if err := calm.cmd.Wait(); err != nil {
		t.Fatalf("the calm child did not end normally: %v", err)
	}
}

func TestHostCgroupZeroBoundStays(t *testing.T) {
	if cg, err := JoinHostCgroup("nobody", 0, 0); err != nil || cg != nil {
		t.Fatalf("JoinHostCgroup(_, 0) = %v, %v; want nothing done", cg, err)
	}
}

// Supervisors of one worker come and go at once while sweeps remove the
// cgroup they leave empty: each joins bounded (one that finds the cgroup
// removed between its making and its move starts again), a sweep while one
// is in it never removes it, and each exits inside it. Lanes of children
// run at once; after each child, its lane sweeps, racing the other lanes'
// joins.

const hostcgCycle = "ROSTER_TEST_HOSTCG_CYCLE" // "WORKER BOUND"

// TestHostCgroupCycleChild is a cycling child's body: join, say so, wait
// for the parent's sweep, check it is still in its bounded cgroup, exit
// inside it.
func TestHostCgroupCycleChild(t *testing.T) {
	arg := os.Getenv(hostcgCycle)
	if arg == "" {
		t.Skip("a child of TestHostCgroupSupervisorsComeAndGoAtOnce")
	}
	var worker string
	var bound int64
	if _, err := fmt.Sscan(arg, &worker, &bound); err != nil {
		fmt.Println("bad args:", err)
		os.Exit(2)
	}
	name := HostCgroupName(testHome, worker)
	before, err := here()
	if err != nil {
		fmt.Println("here:", err)
		os.Exit(3)
	}
	fail := func(format string, a ...any) {
		fmt.Printf(format+"\n", a...)
		os.Exit(1)
	}
	check := func(when string, cg *HostCgroup) {
		in, err := here()
		if err != nil || in.own != path.Join(before.parent, name) {
			fail("%s: in %q (%v), want %s", when, in.own, err, path.Join(before.parent, name))
		}
		if got, err := memoryLimit(cg.Path); err != nil || got != bound {
			fail("%s: bound %d (%v), want %d", when, got, err, bound)
		}
	}
	cg, err := JoinHostCgroup(name, bound, 0)
	if err != nil {
		fail("join: %v", err)
	}
	check("joined", cg)
	fmt.Println("joined")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fail("no word from the parent: %v", err)
	}
	check("after a sweep", cg)
	fmt.Println("ok")
	os.Exit(0) // inside, as roster-box run does
}

// cycleChild runs one cycling child of worker: it joins, the parent sweeps
// (which must not remove the cgroup the child is in) and tells it to check
// again, and it exits. It returns what went wrong ("" if nothing).
func cycleChild(worker string, bound int64, dir string) string {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostCgroupCycleChild$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d", hostcgCycle, worker, bound))
	in, err := cmd.StdinPipe()
	if err != nil {
		return err.Error()
	}
	var out strings.Builder
	outR, err := cmd.StdoutPipe()
	if err != nil {
		return err.Error()
	}
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		return err.Error()
	}
	br := bufio.NewReader(outR)
	line, _ := br.ReadString('\n')
	out.WriteString(line)
	problem := ""
	if line == "joined\n" {
		removed, err := RemoveIdleHostCgroups(testHome)
		switch {
		case err != nil:
			problem = fmt.Sprintf("sweep: %v", err)
		case slices.Contains(removed, filepath.Base(dir)):
			problem = "a sweep removed the cgroup a supervisor is in"
		}
		if _, err := os.Stat(dir); err != nil && problem == "" {
			problem = fmt.Sprintf("the cgroup a supervisor is in is gone after a sweep: %v", err)
		}
	}
	in.Write([]byte("check\n"))
	in.Close()
	rest, _ := io.ReadAll(br)
	out.Write(rest)
	err = cmd.Wait()
	if problem == "" && (err != nil || !strings.HasSuffix(out.String(), "ok\n")) {
		problem = fmt.Sprintf("%v", err)
	}
	if problem != "" {
		return problem + ": " + out.String()
	}
	return ""
}

func TestHostCgroupSupervisorsComeAndGoAtOnce(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	const bound, lanes, rounds = 64 << 20, 4, 10
	worker := "hcg-cycle-" + strconv.Itoa(os.Getpid())
	dir, err := HostCgroupDir(HostCgroupName(testHome, worker))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = RemoveHostCgroup(HostCgroupName(testHome, worker)) })
	done := make(chan []string, lanes)
	for i := 0; i < lanes; i++ {
		go func() {
			var problems []string
			for r := 0; r < rounds; r++ {
				if p := cycleChild(worker, bound, dir); p != "" {
					problems = append(problems, p)
				}
				// The child has exited: a sweep, which removes the
				// cgroup if no other lane's child is in it.
				if _, err := RemoveIdleHostCgroups(testHome); err != nil {
					problems = append(problems, "sweep: "+err.Error())
				}
			}
			done <- problems
		}()
	}
	for i := 0; i < lanes; i++ {
		for _, p := range <-done {
			t.Errorf("a child: %s", p)
		}
	}

	// One more supervisor, alone: it joins (making the cgroup again, or
	// reusing it) and exits inside; the cgroup stays, empty, until a sweep
	// removes it.
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostCgroupCycleChild$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d", hostcgCycle, worker, bound))
	cmd.Stdin = strings.NewReader("check\n")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.HasSuffix(string(out), "ok\n") {
		t.Fatalf("the last child: %v: %s", err, out)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the cgroup its last supervisor exited inside: %v, want it left for the sweep", err)
	}
	if n := procsIn(t, dir); n != 0 {
		t.Fatalf("%d processes in %s after its last supervisor exited", n, dir)
	}
	removed := sweepUntilGone(t, dir)
	if !slices.Equal(removed, []string{filepath.Base(dir)}) {
		t.Errorf("the sweep removed %q, want [%s]", removed, filepath.Base(dir))
	}
}

// procsIn counts the processes in the cgroup at dir.
func procsIn(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		t.Fatal(err)
	}
	return len(strings.Fields(string(b)))
}

// sweepUntilGone sweeps the test home's empty supervisor cgroups until the
// one at dir is gone (a process that has exited may take a moment to
// leave its cgroup), for at most a minute, and returns what the sweeps
// removed.
func sweepUntilGone(t *testing.T, dir string) []string {
	t.Helper()
	var all []string
	for deadline := time.Now().Add(time.Minute); ; {
		removed, err := RemoveIdleHostCgroups(testHome)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, removed...)
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			return all
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still there after a minute of sweeps", dir)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A sweep removes only the home's own supervisor cgroups: another home's
// (the same worker's name) and the box cgroups beside them stay.
func TestHostCgroupSweepIsTheHomesOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	worker := "hcg-sweep-" + strconv.Itoa(os.Getpid())
	mine, err := HostCgroupDir(HostCgroupName(testHome, worker))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := HostCgroupDir(HostCgroupName(testHome+"-other", worker))
	boxes := filepath.Join(filepath.Dir(mine), "roster-"+worker)
	for _, d := range []string{mine, other, boxes} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Rmdir(d) })
	}
	removed, err := RemoveIdleHostCgroups(testHome)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{filepath.Base(mine)}) {
		t.Errorf("removed %q, want [%s]", removed, filepath.Base(mine))
	}
	for _, d := range []string{other, boxes} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("the sweep of /test-home removed %s: %v", d, err)
		}
	}
}

// A box's cgroup is "roster/roster-RUN" beside where the supervisor
// started, at an absolute path, whether or not the supervisor has joined
// its own cgroup since: never inside the supervisor's bound.
func TestBoxCgroupIsBesideTheSupervisorsNotInIt(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	run := "2026-01-02-03-04-05-abcd"
	before := boxCgroup(run, &cgroups.Resources{})
	if before.Name != "" || before.Parent != "" || !path.IsAbs(before.Path) || path.Base(path.Dir(before.Path)) != "roster" {
		t.Fatalf("box cgroup %+v: want an absolute .../roster/%s", before, home.ContainerID(run))
	}
	// In a child, as a supervisor: joined first, then the box's cgroup.
	cmd := exec.Command(os.Args[0], "-test.run=^TestBoxCgroupChild$")
	worker := "hcg-box-" + strconv.Itoa(os.Getpid())
	cmd.Env = append(os.Environ(), hostcgBoxChild+"="+worker+" "+run)
	t.Cleanup(func() { _ = RemoveHostCgroup(HostCgroupName(testHome, worker)) })
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); !strings.HasSuffix(got, "box "+before.Path) {
		t.Errorf("the joined supervisor's box cgroup: %q, want %s (as before joining)", got, before.Path)
	}
}

const hostcgBoxChild = "ROSTER_TEST_HOSTCG_BOX" // "WORKER RUN"

// TestBoxCgroupChild joins a supervisor cgroup, prints the box's cgroup
// path and exits inside it (the parent removes it).
func TestBoxCgroupChild(t *testing.T) {
	arg := os.Getenv(hostcgBoxChild)
	if arg == "" {
		t.Skip("the child of TestBoxCgroupIsBesideTheSupervisorsNotInIt")
	}
	worker, run, _ := strings.Cut(arg, " ")
	if _, err := JoinHostCgroup(HostCgroupName(testHome, worker), 64<<20, 0.5); err != nil {
		fmt.Println("join:", err)
		os.Exit(3)
	}
	fmt.Println("box", boxCgroup(run, &cgroups.Resources{}).Path)
	os.Exit(0)
}

// HoldOpen's writes (the supervisor's own pid into the cgroup it is in)
// move nothing and bound nothing new: held, the supervisor stays in its
// bounded cgroup; stopped, the writes have ended, so a move out stays out.
func TestHostCgroupHoldOpenMovesNothingAndStops(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	worker := "hcg-hold-" + strconv.Itoa(os.Getpid())
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostCgroupHoldChild$")
	cmd.Env = append(os.Environ(), hostcgHoldChild+"="+worker)
	t.Cleanup(func() { _ = RemoveHostCgroup(HostCgroupName(testHome, worker)) })
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasSuffix(string(out), "ok\n") {
		t.Fatalf("child: %v: %s", err, out)
	}
}

const hostcgHoldChild = "ROSTER_TEST_HOSTCG_HOLD" // "WORKER"

// TestHostCgroupHoldChild joins, holds the cgroup open while it checks it
// is in it, bounded, stops, moves back out and checks it stays out.
func TestHostCgroupHoldChild(t *testing.T) {
	worker := os.Getenv(hostcgHoldChild)
	if worker == "" {
		t.Skip("the child of TestHostCgroupHoldOpenMovesNothingAndStops")
	}
	const bound = 64 << 20
	fail := func(format string, a ...any) {
		fmt.Printf(format+"\n", a...)
		os.Exit(1)
	}
	before, err := here()
	if err != nil {
		fail("here: %v", err)
	}
	name := HostCgroupName(testHome, worker)
	cg, err := JoinHostCgroup(name, bound, 0)
	if err != nil {
		fail("join: %v", err)
	}
	stop := cg.HoldOpen()
	// Checked over several of its writes (holdEvery apart): coverage, not
	// a bound on anything.
	for i, start := 0, time.Now(); i < 50 || time.Since(start) < 10*holdEvery; i++ {
		in, err := here()
		if err != nil || in.own != path.Join(before.parent, name) {
			fail("held: in %q (%v), want %s", in.own, err, path.Join(before.parent, name))
		}
		if got, err := memoryLimit(cg.Path); err != nil || got != bound {
			fail("held: bound %d (%v), want %d", got, err, bound)
		}
	}
	stop()
	stop() // once is enough; again does nothing
	if err := cg.MoveBack(); err != nil {
		fail("move back: %v", err)
	}
	for i := 0; i < 50; i++ {
		if in, err := here(); err != nil || in.own != before.own {
			fail("stopped and moved back: in %q (%v), want %s", in.own, err, before.own)
		}
	}
	var none *HostCgroup
	none.HoldOpen()() // no host cgroup: nothing to hold
	fmt.Println("ok")
	os.Exit(0)
}

// `roster-box reap --cgroups` finds the home's empty supervisor cgroups
// wherever a supervisor started, not only beside the caller: one made
// beside another cgroup (a systemd unit's, a session's) is removed too;
// one a process is in, and another home's, stay.
func TestHostCgroupSweepAnywhereFindsOtherPlaces(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	p, err := here()
	if err != nil {
		t.Fatal(err)
	}
	worker := "hcg-anywhere-" + strconv.Itoa(os.Getpid())
	top := filepath.Join(p.mnt, "test-elsewhere-"+strconv.Itoa(os.Getpid()))
	parent := filepath.Join(top, cgroupParent)
	beside, _ := HostCgroupDir(HostCgroupName(testHome, worker))
	mine := filepath.Join(parent, HostCgroupName(testHome, worker))
	busy := filepath.Join(parent, HostCgroupName(testHome, worker+"-busy"))
	other := filepath.Join(parent, HostCgroupName(testHome+"-other", worker))
	box := filepath.Join(parent, "roster-"+worker)
	for _, d := range []string{top, parent, beside, mine, busy, other, box} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, d := range []string{beside, mine, busy, other, box, parent, top} {
			_ = syscall.Rmdir(d)
		}
	})
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	if err := os.WriteFile(filepath.Join(busy, "cgroup.procs"), []byte(strconv.Itoa(sleeper.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	removed, err := RemoveIdleHostCgroupsAnywhere(testHome)
	if err != nil {
		t.Fatal(err)
	}
	rel := func(d string) string { r, _ := filepath.Rel(p.mnt, d); return "/" + r }
	for _, d := range []string{beside, mine} {
		if !slices.Contains(removed, rel(d)) {
			t.Errorf("%s not removed (removed %q)", rel(d), removed)
		}
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there: %v", d, err)
		}
	}
	for _, d := range []string{busy, other, box} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("the sweep removed %s: %v", d, err)
		}
	}
	if !inCgroup(t, busy, sleeper.Process.Pid) {
		t.Error("the sleeper left its cgroup")
	}
}

// host_cpus: a supervisor (its gateway serving a flooding box) bounded at
// a quarter of a core spends at most about that, whatever it tries: two
// threads spinning for a second of wall time get a quarter second of CPU
// or so (unbounded, up to two), and the kernel reports the cgroup
// throttled. The bound is the kernel's: noise on the machine can only
// lower what the child gets.

const hostcgCPU = "ROSTER_TEST_HOSTCG_CPU" // "WORKER"

func TestHostCgroupCPUChild(t *testing.T) {
	worker := os.Getenv(hostcgCPU)
	if worker == "" {
		t.Skip("the child of TestHostCgroupBoundsCPU")
	}
	cg, err := JoinHostCgroup(HostCgroupName(testHome, worker), 64<<20, 0.25)
	if err != nil {
		fmt.Println("join:", err)
		os.Exit(3)
	}
	cpuDir := cg.CPU
	if cpuDir == "" {
		cpuDir = cg.Path
	}
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	stop := time.Now().Add(time.Second)
	done := make(chan struct{})
	for i := 0; i < 2; i++ {
		go func() {
			for time.Now().Before(stop) {
			}
			done <- struct{}{}
		}()
	}
	<-done
	<-done
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	used := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	fmt.Println("cpu", cpuDir, used.Milliseconds())
	os.Exit(0)
}

func TestHostCgroupBoundsCPU(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	worker := "hcg-cpu-" + strconv.Itoa(os.Getpid())
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostCgroupCPUChild$")
	cmd.Env = append(os.Environ(), hostcgCPU+"="+worker, "GOMAXPROCS=4")
	out, err := cmd.Output()
	t.Cleanup(func() {
		if err := RemoveHostCgroup(HostCgroupName(testHome, worker)); err != nil {
			t.Error(err)
		}
	})
	var dir string
	var ms int64
	if _, serr := fmt.Sscanf(string(out), "cpu %s %d", &dir, &ms); err != nil || serr != nil {
		t.Fatalf("child: %q %v", out, err)
	}
	quotaFile, want := "cpu.max", "25000 100000"
	if !cgroups.IsCgroup2UnifiedMode() {
		quotaFile, want = "cpu.cfs_quota_us", "25000"
	}
	b, _ := os.ReadFile(filepath.Join(dir, quotaFile))
	if strings.TrimSpace(string(b)) != want {
		t.Errorf("%s/%s = %q, want %q", dir, quotaFile, b, want)
	}
	stat, _ := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	var throttled int64
	for _, line := range strings.Split(string(stat), "\n") {
		if v, ok := strings.CutPrefix(line, "nr_throttled "); ok {
			throttled, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	t.Logf("two spinning threads for 1 s under host_cpus = 0.25: %d ms of CPU, throttled %d times", ms, throttled)
	if ms > 600 || throttled == 0 {
		t.Fatalf("%d ms of CPU in 1 s at a quarter core (throttled %d times): the bound did not hold", ms, throttled)
	}
}
