package box

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/manager"
)

// The supervisor's host cgroup (host_memory, docs/dispatch-and-box.md,
// "Containment"): the host-side work done for a worker's runs (actions,
// the snapshot's roster-snap, the gateway) runs in a cgroup bounded per
// worker, so a flood of actions or a store of millions of files costs
// that worker, never the host or another worker. Every supervisor of a
// worker shares its one cgroup, a sibling of its boxes' under the same
// "roster" parent: "roster/supervisor-WORKER-HOME", beside
// "roster/roster-RUN" (HOME tells apart workers of one name in two homes).
// The supervisor joins it right after its box's container is created,
// whose cgroup path libcontainer has then fixed where it always was, so
// the box's own cgroup (and its memory limit) stays separate and a box's
// memory is never charged to its supervisor's bound. The cgroup is left in
// place when the supervisor ends (empty, it costs nothing) and reused, its
// bound set again, by the next.

// HostCgroupName is the name of the supervisor cgroup, under the "roster"
// parent, of worker in the home at dir: "supervisor-WORKER-" and 8 hex
// digits of the SHA-256 of dir.
func HostCgroupName(dir, worker string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(dir)))
	return "supervisor-" + worker + "-" + hex.EncodeToString(sum[:4])
}

// hostCgroup is the supervisor cgroup name bounded at max bytes.
func hostCgroup(name string, max int64) *cgroups.Cgroup {
	return &cgroups.Cgroup{
		Name:      name,
		Parent:    "roster",
		Resources: &cgroups.Resources{Memory: max, SkipDevices: true}, // the host's devices stay the supervisor's
	}
}

// JoinHostCgroup moves the calling process (all its threads) into the
// supervisor cgroup name (HostCgroupName), bounded at max bytes, and
// returns the cgroup's memory path. max <= 0 does nothing. The bound is
// written before the move, so the process never runs there unbounded.
func JoinHostCgroup(name string, max int64) (string, error) {
	if max <= 0 || name == "" {
		return "", nil
	}
	cg := hostCgroup(name, max)
	m, err := manager.New(cg)
	if err != nil {
		return "", fmt.Errorf("host_memory: supervisor cgroup %s: %w", cg.Name, err)
	}
	// Apply makes the folders (and enables the controllers) with the
	// process in them; Set then writes the bound. Made empty first (pid
	// -1 is no process) and bounded, then joined.
	if err := m.Apply(-1); err != nil {
		return "", fmt.Errorf("host_memory: supervisor cgroup %s: %w", cg.Name, err)
	}
	// Memory and swap together: a flood is not pushed out to swap past the
	// bound (where swap is accounted: always on v2, memsw on v1).
	if cgroups.IsCgroup2UnifiedMode() || cgroups.PathExists(filepath.Join(m.Path("memory"), "memory.memsw.limit_in_bytes")) {
		cg.Resources.MemorySwap = max
	}
	if err := m.Set(cg.Resources); err != nil {
		return "", fmt.Errorf("host_memory: bound supervisor cgroup %s at %d bytes: %w", cg.Name, max, err)
	}
	if err := m.Apply(os.Getpid()); err != nil {
		return "", fmt.Errorf("host_memory: join supervisor cgroup %s: %w", cg.Name, err)
	}
	return m.Path("memory"), nil
}
