package box

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/opencontainers/cgroups"

	"github.com/roster-sh/roster/lib/home"
)

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
	cg, err := JoinHostCgroup(HostCgroupName("/test-home", worker), bound)
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
		if err := RemoveHostCgroup(HostCgroupName("/test-home", worker)); err != nil {
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
	if !strings.HasSuffix(calm.path, "/roster/"+HostCgroupName("/test-home", "hcg-calm-"+tag)) {
		t.Errorf("calm child's cgroup %s is not roster/%s", calm.path, HostCgroupName("/test-home", "hcg-calm-"+tag))
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
	if cg, err := JoinHostCgroup("nobody", 0); err != nil || cg != nil {
		t.Fatalf("JoinHostCgroup(_, 0) = %v, %v; want nothing done", cg, err)
	}
}

// Supervisors of one worker come and go at once: each leaving one removes
// the cgroup if it is the last (rmdir of one still in use fails, EBUSY),
// and one joining that finds it removed between making and moving in
// starts again. Children join, check and leave in a loop, all at once.

const hostcgCycle = "ROSTER_TEST_HOSTCG_CYCLE" // "WORKER BOUND ROUNDS"

// TestHostCgroupCycleChild is a cycling child's body.
func TestHostCgroupCycleChild(t *testing.T) {
	arg := os.Getenv(hostcgCycle)
	if arg == "" {
		t.Skip("a child of TestHostCgroupSupervisorsComeAndGoAtOnce")
	}
	var worker string
	var bound int64
	var rounds int
	if _, err := fmt.Sscan(arg, &worker, &bound, &rounds); err != nil {
		fmt.Println("bad args:", err)
		os.Exit(2)
	}
	name := HostCgroupName("/test-home", worker)
	before, err := here()
	if err != nil {
		fmt.Println("here:", err)
		os.Exit(3)
	}
	fail := func(format string, a ...any) {
		fmt.Printf(format+"\n", a...)
		os.Exit(1)
	}
	for i := 0; i < rounds; i++ {
		cg, err := JoinHostCgroup(name, bound)
		if err != nil {
			fail("round %d: join: %v", i, err)
		}
		in, err := here()
		if err != nil || in.own != path.Join(before.parent, name) {
			fail("round %d: in %q (%v), want %s", i, in.own, err, path.Join(before.parent, name))
		}
		if got, err := memoryLimit(cg.Path); err != nil || got != bound {
			fail("round %d: bound %d (%v), want %d", i, got, err, bound)
		}
		if err := cg.Leave(); err != nil {
			fail("round %d: leave: %v", i, err)
		}
		if out, err := here(); err != nil || out.own != before.own {
			fail("round %d: left to %q (%v), want %s", i, out.own, err, before.own)
		}
	}
	fmt.Println("ok")
	os.Exit(0)
}

func TestHostCgroupSupervisorsComeAndGoAtOnce(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	const bound, children, rounds = 64 << 20, 4, 25
	worker := "hcg-cycle-" + strconv.Itoa(os.Getpid())
	p, err := here()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(p.mnt, p.parent, HostCgroupName("/test-home", worker))
	t.Cleanup(func() { _ = RemoveHostCgroup(HostCgroupName("/test-home", worker)) })
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, children)
	for i := 0; i < children; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHostCgroupCycleChild$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d", hostcgCycle, worker, bound, rounds))
		go func() {
			out, err := cmd.CombinedOutput()
			done <- result{out, err}
		}()
	}
	for i := 0; i < children; i++ {
		r := <-done
		if r.err != nil || !strings.Contains(string(r.out), "ok\n") {
			t.Errorf("a child failed: %v: %s", r.err, r.out)
		}
	}
	// The last to leave found it empty and removed it.
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("supervisor cgroup %s left behind after its last supervisor: %v", dir, err)
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
	cmd.Env = append(os.Environ(), hostcgBoxChild+"=hcg-box-"+strconv.Itoa(os.Getpid())+" "+run)
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
// path, leaves.
func TestBoxCgroupChild(t *testing.T) {
	arg := os.Getenv(hostcgBoxChild)
	if arg == "" {
		t.Skip("the child of TestBoxCgroupIsBesideTheSupervisorsNotInIt")
	}
	worker, run, _ := strings.Cut(arg, " ")
	cg, err := JoinHostCgroup(HostCgroupName("/test-home", worker), 64<<20)
	if err != nil {
		fmt.Println("join:", err)
		os.Exit(3)
	}
	fmt.Println("box", boxCgroup(run, &cgroups.Resources{}).Path)
	if err := cg.Leave(); err != nil {
		fmt.Println("leave:", err)
		os.Exit(4)
	}
	os.Exit(0)
}
