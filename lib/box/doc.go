// Package box is the container a worker runs in, made with runc's
// libcontainer, and its supervisor (docs/dispatch-and-box.md, "roster-box").
//
// It is the only package that imports libcontainer, and only cmd/roster-box
// links it (the one cgo binary). A box is: the host's /usr (or the spec's
// rootfs) read-only under a generated root, a generated /etc, tmpfs /tmp,
// /run, /dev/shm and $HOME, the worker's store, lock folder, view, runs and
// the run's outbox bind-mounted, the suite's static roster-task,
// roster-lock and roster-reaper on PATH, the worker's uid with no capabilities,
// no_new_privs, a deny-list seccomp profile, a read-only root, new
// mount/pid/ipc/uts/cgroup (and, unless network = "host", network)
// namespaces, and cgroup limits. Its pid 1 is the reaper (package
// box/reaper) run as the in-box roster-reaper.
//
// Invariants: the worker's `store` lock is held shared while mounts are
// made; cgroup usage is read before Destroy; everything under the outbox is
// read through package outbox, never by path.
package box
