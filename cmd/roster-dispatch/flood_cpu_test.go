package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/box"
)

// floodPy opens connection after connection to the run's gateway, for
// seconds, asking for a host it is not granted (refused before any lookup
// or dial: .invalid), from 8 threads: the red team's flood, which took
// 0.9 core of the host outside the worker's limits.
const floodPy = `import os, socket, threading, time
end = time.time() + float(os.environ.get("FLOOD_SECONDS", "4"))
n = [0]
def go():
    while time.time() < end:
        try:
            s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
            s.sendall(b"GET http://flood.invalid/ HTTP/1.1\r\nHost: flood.invalid\r\nConnection: close\r\n\r\n")
            while s.recv(65536):
                pass
            s.close()
            n[0] += 1
        except OSError:
            pass
ts = [threading.Thread(target=go) for _ in range(8)]
[t.start() for t in ts]
[t.join() for t in ts]
open(os.path.expanduser("~/store/requests"), "w").write(str(n[0]))
`

// spinPy is a fixed amount of CPU work; it writes how long it took.
const spinPy = `import os, time
t = time.time()
sum(i * i for i in range(int(os.environ.get("SPIN", "30000000"))))
open(os.path.expanduser("~/store/took"), "a").write("%.3f\n" % (time.time() - t))
`

// A worker flooding its own gateway beside a CPU-bound one (issue 27,
// "Host CPU"): the flood's supervisor and gateway stay within its
// host_cpus (here a quarter core), asserted loosely (under 0.4 core over
// the flood; unbounded it took 0.57), so the other worker keeps the rest
// of the host. How much
// slower the CPU-bound run is beside the flood is logged here and measured
// by the benchmark (bench/scale.sh's host_cpus figure), never asserted as a
// time.
func TestFloodingWorkerStaysWithinHostCPUs(t *testing.T) {
	e := newEnv(t, "[dispatch]\ncap = 4\n")
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed (make deps installs it)")
	}
	e.worker("flood", `python3 ~/store/flood.py; roster-task complete`, "host_cpus = 0.25")
	e.worker("spin", `python3 ~/store/spin.py; roster-task complete`)
	for w, py := range map[string]string{"flood": floodPy, "spin": spinPy} {
		if err := os.WriteFile(filepath.Join(e.h.Worker(w).Store(), w+".py"), []byte(py), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The CPU-bound run alone first.
	e.add("spin", "spin alone")
	if code := e.start("--until-idle").wait(t, 3*time.Minute); code != 0 {
		t.Fatal("the spin run alone failed")
	}
	// Then both at once, the flood's supervisor cgroup sampled meanwhile.
	name := box.HostCgroupName(e.h.Dir, "flood")
	var mu sync.Mutex
	var first, last time.Duration
	var t0, t1 time.Time
	var lastErr error
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			used, err := box.HostCgroupCPU(name)
			if err != nil {
				mu.Lock()
				lastErr = err
				mu.Unlock()
				continue
			}
			mu.Lock()
			if t0.IsZero() {
				first, t0 = used, time.Now()
			}
			last, t1 = used, time.Now()
			mu.Unlock()
		}
	}()
	e.add("flood", "flood the gateway")
	e.add("spin", "spin beside the flood")
	d := e.start("--until-idle")
	code := d.wait(t, 3*time.Minute)
	close(stop)
	<-sampled
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, d.logText())
	}
	reqs, _ := os.ReadFile(filepath.Join(e.h.Worker("flood").Store(), "requests"))
	took, _ := os.ReadFile(filepath.Join(e.h.Worker("spin").Store(), "took"))
	n, _ := strconv.Atoi(strings.TrimSpace(string(reqs)))
	times := strings.Fields(string(took))
	mu.Lock()
	defer mu.Unlock()
	wall := t1.Sub(t0)
	if n < 100 || wall < 2*time.Second || len(times) != 2 {
		t.Fatalf("the flood did not run as meant: %d requests, sampled %s (%v), spin times %q", n, wall, lastErr, times)
	}
	share := (last - first).Seconds() / wall.Seconds()
	t.Logf("flood: %d refused requests; its supervisor and gateway used %.2f core over %.1f s (host_cpus 0.25); spin alone %ss, beside the flood %ss",
		n, share, wall.Seconds(), times[0], times[1])
	// Unbounded (host_cpus = 2) the same flood's supervisor took 0.57
	// core here; bounded at a quarter core it must stay near it.
	if share > 0.4 {
		t.Fatalf("the flooding worker's supervisor used %.2f core, over its host_cpus of 0.25 (loosely: 0.4)", share)
	}
}
