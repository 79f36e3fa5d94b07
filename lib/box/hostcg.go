package box

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/fs2"
	"github.com/opencontainers/cgroups/manager"
	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/home"
)

// The supervisor's host cgroup (host_memory, docs/dispatch-and-box.md,
// "Containment"): the host-side work done for a worker's runs (preparing
// the box, reading its partition, actions, the gateway, the snapshot's
// roster-snap) runs in a cgroup bounded per worker, so a flood of actions,
// a huge tasks.json or a store of millions of files costs that worker,
// never the host or another worker. Every supervisor of a worker shares
// its one cgroup, a sibling of its boxes' under the same "roster" parent:
// "roster/supervisor-WORKER-HOME", beside "roster/roster-RUN" (HOME tells
// apart workers of one name in two homes).
//
// The supervisor joins it first thing (EnterHostCgroup), before it reads
// anything of the worker's but its spec. Its boxes' cgroups are then not
// placed relative to the cgroup it is in (libcontainer's way with a
// relative name, which would nest a box inside its supervisor's bound) but
// at an absolute path (boxCgroup): "roster" beside the cgroup the
// supervisor started in, where libcontainer always put them (v2: in the
// parent of that cgroup; v1: in it, as the memory hierarchy has it, for
// every hierarchy alike).
//
// The supervisor exits inside its cgroup: a move out is a cgroup migration
// (under v1 it waits an RCU grace period, 8 to 12 ms), on the run's end
// path, and nothing it does after the run needs to be unbounded. The
// cgroup it leaves empty is reused by the worker's next supervisor and
// removed by `roster-box reap` (RemoveHostCgroup, RemoveIdleHostCgroups;
// the dispatcher's sweep): an empty one only, as the kernel refuses to
// remove a cgroup with a process in it. A supervisor whose cgroup is
// removed between its making and the move starts its join again.

// cgroupParent is the folder, beside the cgroup a supervisor started in,
// of every box's and supervisor's cgroup.
const cgroupParent = "roster"

// supervisorPrefix starts every supervisor cgroup's name.
const supervisorPrefix = "supervisor-"

// HostCgroupName is the name of the supervisor cgroup, under the "roster"
// parent, of worker in the home at dir: "supervisor-WORKER-" and 8 hex
// digits of the SHA-256 of dir.
func HostCgroupName(dir, worker string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(dir)))
	return supervisorPrefix + worker + "-" + hex.EncodeToString(sum[:4])
}

// place is where this process's roster cgroups go: mnt is the folder of
// the hierarchy that matters (v2: the unified one; v1: memory's), own the
// process's cgroup in it and parent the "roster" cgroup its boxes and
// supervisor cgroups are made in, both as paths from the hierarchy's root.
type place struct {
	mnt, own, parent string
}

// here is this process's place. A process already in a supervisor cgroup
// (a supervisor's hook that runs another box) counts from where that
// supervisor started, so no roster cgroup is ever made inside one.
func here() (place, error) {
	if cgroups.IsCgroup2UnifiedMode() {
		return hereIn("")
	}
	return hereIn("memory")
}

// hereIn is here in the v1 hierarchy of subsystem sub ("": the unified
// v2 one).
func hereIn(sub string) (place, error) {
	v2 := sub == ""
	var p place
	if v2 {
		own, err := cgroups.ParseCgroupFile("/proc/self/cgroup")
		if err != nil {
			return p, err
		}
		if p.own = own[""]; p.own == "" {
			return p, errors.New("no cgroup v2 path in /proc/self/cgroup")
		}
		p.mnt = fs2.UnifiedMountpoint
	} else {
		full, err := cgroups.GetOwnCgroupPath(sub)
		if err != nil {
			return p, err
		}
		if p.mnt, err = cgroups.FindCgroupMountpoint("", sub); err != nil {
			return p, err
		}
		rel, err := filepath.Rel(p.mnt, full)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return p, fmt.Errorf("%s cgroup %s is not under its mount %s", sub, full, p.mnt)
		}
		p.own = "/" + rel
	}
	p.own = path.Clean(p.own)
	base := p.own
	if dir, leaf := path.Split(base); strings.HasPrefix(leaf, supervisorPrefix) && path.Base(dir) == cgroupParent {
		base = path.Dir(path.Dir(base))
	} else if v2 {
		// As libcontainer does: the process's own cgroup has processes,
		// so under v2 it cannot have children with controllers.
		base = path.Dir(base)
	}
	p.parent = path.Join(base, cgroupParent)
	return p, nil
}

// boxCgroup is the box cgroup's configuration for run: an absolute path,
// "roster/roster-RUN" beside the cgroup the supervisor started in, so it
// never depends on the cgroup the supervisor is in when the container is
// made. If the process's cgroup cannot be read it is libcontainer's own
// relative placement.
func boxCgroup(run string, res *cgroups.Resources) *cgroups.Cgroup {
	p, err := here()
	if err != nil {
		return &cgroups.Cgroup{Name: home.ContainerID(run), Parent: cgroupParent, Resources: res}
	}
	return &cgroups.Cgroup{Path: path.Join(p.parent, home.ContainerID(run)), Resources: res}
}

// HostCgroup is a supervisor's place in its worker's host cgroup.
type HostCgroup struct {
	Path string // the cgroup's folder (v1: in the memory hierarchy)
	from string // the folder of the cgroup the process left for it
	root string // the hierarchy's root folder: where it goes if from is gone
	// CPU is, under cgroup v1, the same cgroup in the cpu hierarchy, which
	// holds the host_cpus bound ("" under v2, where Path holds both, or
	// when no CPU bound was asked for).
	CPU              string
	cpuFrom, cpuRoot string
}

// cpuPeriod is the CFS period host_cpus is a quota of (the kernel's
// default, 100 ms).
const cpuPeriod = 100000

func cpuQuota(cpus float64) int64 { return max(int64(cpus*cpuPeriod), 1000) }

// EnterHostCgroup moves the calling process into the supervisor cgroup of
// spec's worker, bounded at its host_memory and host_cpus
// (JoinHostCgroup): what `roster-box run` does first, with the spec it
// loaded for the whole run (Request.Spec).
func EnterHostCgroup(h home.Home, spec *config.Worker) (*HostCgroup, error) {
	return JoinHostCgroup(HostCgroupName(h.Dir, spec.Name), spec.HostMemory, spec.HostCPUs)
}

// joinTries bounds how often a join starts again because the cgroup was
// removed under it (by another supervisor of the worker leaving).
const joinTries = 20

// JoinHostCgroup moves the calling process (all its threads) into the
// supervisor cgroup name (HostCgroupName), bounded at max bytes and, with
// cpus > 0, at that many cores of CPU time (host_cpus: the gateway's
// work for a flooding box slows its own worker, not another's runs), and
// returns it. max <= 0 does nothing (nil, nil). The bound is written
// before the move and checked after it, so the process never runs there
// unbounded: a sweep may remove the empty cgroup between its making and
// the move (RemoveIdleHostCgroups), and then the join starts again.
func JoinHostCgroup(name string, max int64, cpus float64) (*HostCgroup, error) {
	if max <= 0 || name == "" {
		return nil, nil
	}
	p, err := here()
	if err != nil {
		return nil, fmt.Errorf("host_memory: supervisor cgroup %s: %w", name, err)
	}
	inner := path.Join(p.parent, name)
	c := &HostCgroup{Path: filepath.Join(p.mnt, inner), from: filepath.Join(p.mnt, p.own), root: p.mnt}
	for try := 1; ; try++ {
		err := c.join(inner, max, cpus)
		if err == nil {
			break
		}
		if !cgroupGone(err) || try == joinTries {
			return nil, fmt.Errorf("host_memory: supervisor cgroup %s: %w", name, err)
		}
	}
	if cpus <= 0 || cgroups.IsCgroup2UnifiedMode() {
		return c, nil
	}
	if err := c.joinCPU(name, cpus); err != nil {
		return nil, fmt.Errorf("host_cpus: supervisor cgroup %s: %w", name, err)
	}
	return c, nil
}

// joinCPU (cgroup v1) moves the process into the cgroup name of the cpu
// hierarchy, bounded at cpus cores, as join does in the memory one.
func (c *HostCgroup) joinCPU(name string, cpus float64) error {
	p, err := hereIn("cpu")
	if err != nil {
		return err
	}
	c.CPU, c.cpuFrom, c.cpuRoot = filepath.Join(p.mnt, p.parent, name), filepath.Join(p.mnt, p.own), p.mnt
	quota := strconv.FormatInt(cpuQuota(cpus), 10)
	for try := 1; ; try++ {
		err := os.MkdirAll(c.CPU, 0o755)
		if err == nil {
			err = cgroups.WriteFile(c.CPU, "cpu.cfs_period_us", strconv.Itoa(cpuPeriod))
		}
		if err == nil {
			err = cgroups.WriteFile(c.CPU, "cpu.cfs_quota_us", quota)
		}
		if err == nil {
			err = cgroups.WriteCgroupProc(c.CPU, os.Getpid())
		}
		if err == nil {
			// Removed and made again between the bound and the move.
			if got, rerr := cgroups.ReadFile(c.CPU, "cpu.cfs_quota_us"); rerr != nil || strings.TrimSpace(got) != quota {
				err = cgroups.WriteFile(c.CPU, "cpu.cfs_quota_us", quota)
			}
		}
		if err == nil || !cgroupGone(err) || try == joinTries {
			return err
		}
	}
}

// join makes the cgroup (only the memory controller's, under v1), bounds
// it, moves the process in and checks the bound is still there.
func (c *HostCgroup) join(inner string, max int64, cpus float64) error {
	res := &cgroups.Resources{Memory: max, SkipDevices: true} // the host's devices stay the supervisor's
	if cpus > 0 && cgroups.IsCgroup2UnifiedMode() {
		res.CpuQuota, res.CpuPeriod = cpuQuota(cpus), cpuPeriod
	}
	paths := map[string]string{"memory": c.Path}
	if cgroups.IsCgroup2UnifiedMode() {
		paths = map[string]string{"": c.Path}
	}
	m, err := manager.NewWithPaths(&cgroups.Cgroup{Path: inner, Resources: res}, paths)
	if err != nil {
		return err
	}
	if err := m.Apply(-1); err != nil { // the folder (v2: the controllers above it), no process
		return err
	}
	// Memory and swap together: a flood is not pushed out to swap past the
	// bound (where swap is accounted: always on v2, memsw on v1).
	if cgroups.IsCgroup2UnifiedMode() || cgroups.PathExists(filepath.Join(c.Path, "memory.memsw.limit_in_bytes")) {
		res.MemorySwap = max
	}
	if err := m.Set(res); err != nil {
		return fmt.Errorf("bound at %d bytes: %w", max, err)
	}
	if err := cgroups.WriteCgroupProc(c.Path, os.Getpid()); err != nil {
		return err
	}
	// Removed and made again by another supervisor between the bound and
	// the move: that one writes the bound too, but it is written here now.
	if got, err := memoryLimit(c.Path); err != nil || got != max {
		if err := m.Set(res); err != nil {
			return fmt.Errorf("bound at %d bytes: %w", max, err)
		}
	}
	return nil
}

// memoryLimit reads the memory bound of the cgroup at dir (v2 memory.max,
// v1 memory.limit_in_bytes); "max" (no bound) is -1.
func memoryLimit(dir string) (int64, error) {
	file := "memory.limit_in_bytes"
	if cgroups.IsCgroup2UnifiedMode() {
		file = "memory.max"
	}
	s, err := cgroups.ReadFile(dir, file)
	if err != nil {
		return 0, err
	}
	if s = strings.TrimSpace(s); s == "max" {
		return -1, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

// cgroupGone reports whether err may be a cgroup removed under its user:
// a file or the folder gone (ENOENT), a write to a removed one (ENODEV),
// the folder's making refused as it was there and then gone before
// os.MkdirAll looked again (EEXIST: a sweep removed it between the two),
// or, under v1, the swap bound written into one made
// again meanwhile, whose memory bound is not written yet (EINVAL: swap
// below memory).
func cgroupGone(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrExist) ||
		errors.Is(err, unix.ENODEV) || errors.Is(err, unix.EINVAL)
}

// HoldOpen keeps the kernel's cgroup migrations cheap from the join until
// stop is called: `roster-box run` calls it after the join and stops it
// once the container is set up, so that the box's own migration into its
// cgroups (libcontainer's, which runc pays too) waits no grace period.
//
// Every migration (a write to cgroup.procs) takes the kernel's one
// cgroup_threadgroup_rwsem for writing, whose rcu_sync waits a whole RCU
// grace period (8 to 16 ms here, jiffy-bound) unless another writer came
// within the last one. The join pays that wait once; the box's migration
// shares it only if it comes within a grace period after, which a start
// does not make reliably (quiet: about half the time, at load 8: 6 runs in
// 20). So the supervisor writes its own pid into the cgroup it is already
// in (no migration, nothing moved) every 2 ms meanwhile: each such write is
// a writer, which keeps the fast path open for the next. Best effort: an
// error ends it. Nil (no host cgroup) does nothing.
func (c *HostCgroup) HoldOpen() (stop func()) {
	if c == nil {
		return func() {}
	}
	f, err := cgroups.OpenFile(c.Path, cgroups.CgroupProcesses, os.O_WRONLY)
	if err != nil {
		return func() {}
	}
	pid := []byte(strconv.Itoa(os.Getpid()))
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		defer f.Close()
		tick := time.NewTicker(holdEvery)
		defer tick.Stop()
		for deadline := time.Now().Add(holdFor); time.Now().Before(deadline); {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if _, err := f.Write(pid); err != nil {
				return
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); <-ended }) }
}

// holdEvery is how often HoldOpen writes (well within a grace period),
// holdFor the longest it holds whatever happens to its stop: a start's
// set-up takes tens of ms, 400 at load 9; one that waits longer (a store
// lock held by a snapshot, up to StoreLockWait) may pay a grace period
// again rather than have every fork on the host take the slow path
// meanwhile.
const (
	holdEvery = 2 * time.Millisecond
	holdFor   = time.Second
)

// MoveBack moves the process back to the cgroup it left for c (or, if
// that is gone, to the hierarchy's root), leaving c in place for the
// sweep. `roster-box run` never calls it, as it exits inside c; it is for
// a caller that lives on after the run (tests run the command in their
// own process). Nothing bounds the process after. Nil does nothing.
func (c *HostCgroup) MoveBack() error {
	if c == nil {
		return nil
	}
	pid := os.Getpid()
	if err := cgroups.WriteCgroupProc(c.from, pid); err != nil {
		if err := cgroups.WriteCgroupProc(c.root, pid); err != nil {
			return fmt.Errorf("host_memory: leave %s: %w", c.Path, err)
		}
	}
	if c.CPU != "" {
		if err := cgroups.WriteCgroupProc(c.cpuFrom, pid); err != nil {
			if err := cgroups.WriteCgroupProc(c.cpuRoot, pid); err != nil {
				return fmt.Errorf("host_cpus: leave %s: %w", c.CPU, err)
			}
		}
	}
	return nil
}

// HostCgroupDir is the folder of the supervisor cgroup name (v1: in the
// memory hierarchy) where this process would make it.
func HostCgroupDir(name string) (string, error) {
	p, err := here()
	if err != nil {
		return "", err
	}
	return filepath.Join(p.mnt, p.parent, name), nil
}

// v1CPU is this process's place in the cpu hierarchy under cgroup v1,
// where host_cpus cgroups are made beside the memory ones (none under v2,
// or when it cannot be read).
func v1CPU() []place {
	if cgroups.IsCgroup2UnifiedMode() {
		return nil
	}
	p, err := hereIn("cpu")
	if err != nil {
		return nil
	}
	return []place{p}
}

// HostCgroupCPU is the CPU time the processes of the supervisor cgroup
// name have used (v1: cpuacct.usage in the cpu hierarchy; v2: cpu.stat's
// usage_usec): what a run's supervisor and gateway cost the host, for the
// tests and the benchmark of host_cpus.
func HostCgroupCPU(name string) (time.Duration, error) {
	if cgroups.IsCgroup2UnifiedMode() {
		dir, err := HostCgroupDir(name)
		if err != nil {
			return 0, err
		}
		stat, err := cgroups.ReadFile(dir, "cpu.stat")
		if err != nil {
			return 0, err
		}
		for _, line := range strings.Split(stat, "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				us, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				return time.Duration(us) * time.Microsecond, err
			}
		}
		return 0, fmt.Errorf("%s/cpu.stat: no usage_usec", dir)
	}
	for _, p := range v1CPU() {
		dir := filepath.Join(p.mnt, p.parent, name)
		if v, err := cgroups.ReadFile(dir, "cpuacct.usage"); err == nil { // cpu and cpuacct mounted together
			ns, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Duration(ns), err
		}
		// cpuacct apart: the CPU time of the processes now in the cgroup
		pids, err := cgroups.GetPids(dir)
		if err != nil {
			return 0, err
		}
		var ticks int64
		for _, pid := range pids {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				continue
			}
			f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
			if len(f) > 12 {
				u, _ := strconv.ParseInt(f[11], 10, 64) // utime, field 14
				k, _ := strconv.ParseInt(f[12], 10, 64) // stime, field 15
				ticks += u + k
			}
		}
		return time.Duration(ticks) * 10 * time.Millisecond, nil // USER_HZ is 100 on Linux
	}
	return 0, errors.New("no cpu hierarchy")
}
