package box

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/manager"
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
	path, err := JoinHostCgroup(HostCgroupName("/test-home", worker), bound)
	if err != nil {
		fmt.Println("join:", err)
		os.Exit(3)
	}
	fmt.Println("joined", path)
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
		if m, err := manager.New(hostCgroup(HostCgroupName("/test-home", worker), bound)); err == nil {
			_ = m.Destroy()
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
	if path, err := JoinHostCgroup("nobody", 0); err != nil || path != "" {
		t.Fatalf("JoinHostCgroup(_, 0) = %q, %v; want nothing done", path, err)
	}
}
