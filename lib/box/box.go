package box

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/manager"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/repos"
	"github.com/roster-sh/roster/lib/runs"
)

// StoreLockWait bounds how long a box start waits for the worker's `store`
// lock (held exclusively by a snapshot or a restore, or by a box).
var StoreLockWait = 60 * time.Second

// Stdio is what the box's command reads and writes.
type Stdio struct {
	Stdin          io.Reader // nil = /dev/null
	Stdout, Stderr io.Writer
	// Terminal gives the command a pseudo-terminal of its own instead
	// (Stdin, Stdout and Stderr unused): Box.Console is its master side.
	// Rows and Cols are its first size (0 = the kernel's default).
	Terminal   bool
	Rows, Cols uint16
}

// Box is a started container.
type Box struct {
	spec    *Spec
	c       *libcontainer.Container
	p       *libcontainer.Process
	Started time.Time
	Exited  time.Time // when Wait saw pid 1 end: Exited - Started is the box's wall time
	status  *os.File  // read end of pid 1's status pipe: how the command ended
	// Console is the master side of the box's terminal (Stdio.Terminal);
	// the caller reads the box's output from it, writes its input to it,
	// and closes it.
	Console *os.File
}

// Launch makes and starts the box s describes, with briefing as
// $HOME/self/briefing.md. The worker's store lock is held shared while the
// mounts are made, so a restore happens wholly before or after.
func Launch(ctx context.Context, s *Spec, briefing []byte, io Stdio) (*Box, error) {
	return LaunchAfter(ctx, s, briefing, io, nil)
}

// LaunchAfter is Launch with a gate: ready (if not nil) runs while the box
// is being prepared and must succeed before the container starts; its
// error aborts the start and is returned as it is. The supervisor writes
// box.json and re-checks the claim there, off the start's critical path.
func LaunchAfter(ctx context.Context, s *Spec, briefing []byte, io Stdio, ready func() error) (*Box, error) {
	if !SeccompBuilt {
		return nil, ErrNoSeccomp
	}
	gate := make(chan error, 1)
	if ready == nil {
		gate <- nil
	} else {
		go func() { gate <- ready() }()
	}
	b, err := launch(ctx, s, briefing, io, gate)
	if err != nil && ready != nil {
		<-gate // never leave ready running past the return
		gate <- nil
	}
	return b, err
}

func launch(ctx context.Context, s *Spec, briefing []byte, io Stdio, gate chan error) (*Box, error) {
	cfg, err := boxConfig(s, briefing)
	if err != nil {
		return nil, err
	}
	mark(ctx, "box config and scratch")
	unlock, err := holdStoreShared(ctx, s.Locks)
	if err != nil {
		RemoveScratch(s.Run)
		return nil, err
	}
	defer unlock()
	mark(ctx, "store lock")

	c, err := createContainer(s, cfg)
	if err != nil {
		RemoveScratch(s.Run)
		return nil, err
	}
	mark(ctx, "container made")
	// pid 1 exits 128+N when a signal N killed the command, which the
	// command could also have chosen: it says which on this pipe (its fd
	// 3, close-on-exec inside the box, so the command never has it).
	statusR, statusW, err := os.Pipe()
	if err != nil {
		c.Destroy()
		RemoveScratch(s.Run)
		return nil, err
	}
	defer statusW.Close()
	started := false
	defer func() {
		if !started {
			statusR.Close()
		}
	}()
	p := &libcontainer.Process{
		Args:       append(initArgs(s), s.Command...),
		ExtraFiles: []*os.File{statusW},
		Env:        boxEnv(s),
		UID:        s.UID,
		GID:        s.UID,
		Cwd:        BoxHome,
		Stdin:      io.Stdin,
		Stdout:     io.Stdout,
		Stderr:     io.Stderr,
		Init:       true,
	}
	var sock *os.File
	if io.Terminal {
		var boxEnd *os.File
		if sock, boxEnd, err = consoleSocket(); err != nil {
			c.Destroy()
			RemoveScratch(s.Run)
			return nil, err
		}
		defer sock.Close()
		defer boxEnd.Close()
		p.Stdin, p.Stdout, p.Stderr = nil, nil, nil
		p.ConsoleSocket, p.ConsoleHeight, p.ConsoleWidth = boxEnd, io.Rows, io.Cols
	}
	if err := <-gate; err != nil {
		gate <- nil
		c.Destroy()
		RemoveScratch(s.Run)
		return nil, err
	}
	gate <- nil
	mark(ctx, "ready")
	if err := c.Start(p); err != nil {
		c.Destroy()
		RemoveScratch(s.Run)
		return nil, fmt.Errorf("start box: %w", err)
	}
	mark(ctx, "container set up")
	if s.knowledgeDone != nil {
		<-s.knowledgeDone // written beside the set-up; pid 1 makes ~/knowledge from them
		mark(ctx, "knowledge objects")
	}
	if err := c.Exec(); err != nil {
		err = fmt.Errorf("start box: %w", err)
		_ = c.Signal(unix.SIGKILL)
		_, _ = p.Wait()
		c.Destroy()
		RemoveScratch(s.Run)
		return nil, err
	}
	statusW.Close() // pid 1 holds the only write end now
	b := &Box{spec: s, c: c, p: p, Started: time.Now(), status: statusR}
	mark(ctx, "container started")
	if sock != nil {
		if b.Console, err = recvMaster(sock); err != nil {
			_ = c.Signal(unix.SIGKILL)
			_, _ = p.Wait()
			c.Destroy()
			RemoveScratch(s.Run)
			return nil, err
		}
	}
	started = true
	return b, nil
}

// initArgs is pid 1's command line before the box's command.
func initArgs(s *Spec) []string {
	a := []string{BoxBin + "/" + ReaperTool, "--status-fd=3"}
	if s.Network == "gateway" {
		a = append(a, "--gateway="+BoxGatewayAddr+","+BoxGatewaySock)
		if s.Knowledge != "" {
			branch := ""
			if s.Knowledge == "write" {
				branch = repos.KnowledgeRunPrefix + s.Run
			}
			k := "--knowledge=" + BoxGatewayURL + "/git/" + repos.KnowledgeName + "," + branch
			if s.KnowledgeObjects {
				k += "," + BoxKnowledge
			}
			a = append(a, k)
		}
	}
	return append(a, "--")
}

// boxConfig checks what the box needs on the host (a command, the reaper,
// the spec's host paths), picks its root (the spec's or the shared
// generated one), writes its scratch folders and returns its libcontainer
// configuration.
func boxConfig(s *Spec, briefing []byte) (*configs.Config, error) {
	if len(s.Command) == 0 {
		return nil, errs.New(errs.ErrUsage, "worker "+s.Worker+": no command to run (set command in its spec, or give one after --)")
	}
	reaper, ok := s.Tools[ReaperTool]
	if !ok || reaper == "" {
		return nil, fmt.Errorf("%s not found: the box's pid 1 needs it beside roster-box", ReaperTool)
	}
	if err := checkHostPaths(s); err != nil {
		return nil, err
	}
	rootfs := s.Rootfs
	if rootfs == "" {
		names := make([]string, 0, len(s.Tools))
		for t := range s.Tools {
			names = append(names, t)
		}
		var err error
		if rootfs, err = SharedRootfs(names); err != nil {
			return nil, fmt.Errorf("generated root: %w", err)
		}
	}
	etc, self, err := makeScratch(s, briefing)
	if err != nil {
		return nil, fmt.Errorf("box scratch folder: %w", err)
	}
	return containerConfig(s, rootfs, etc, self), nil
}

// holdStoreShared takes the worker's `store` lock shared, waiting at most
// StoreLockWait, and returns its release.
func holdStoreShared(ctx context.Context, locks string) (func(), error) {
	dir, err := fsx.OpenDir(locks)
	if err != nil {
		return nil, fmt.Errorf("lock folder: %w", err)
	}
	defer dir.Close()
	f, err := fsx.OpenLockFile(dir, "store")
	if err != nil {
		return nil, err
	}
	if err := fsx.Flock(ctx, f, true, StoreLockWait); err != nil {
		f.Close()
		return nil, fmt.Errorf("store lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// Exit is how the box's pid 1 ended.
type Exit struct {
	Code   int    // exit status (128+N when the command died of signal N)
	Signal string // the signal that killed the command, or pid 1 itself (the box was killed); "" if none
}

// Wait waits for pid 1 to end.
func (b *Box) Wait() (Exit, error) {
	st, err := b.p.Wait()
	b.Exited = time.Now()
	sig := b.readStatus()
	if st == nil {
		return Exit{Code: -1}, err
	}
	ws, _ := st.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return Exit{Code: 128 + int(ws.Signal()), Signal: unix.SignalName(ws.Signal())}, nil
	}
	code := ws.ExitStatus()
	if sig > 0 && code == 128+int(sig) {
		return Exit{Code: code, Signal: unix.SignalName(sig)}, nil
	}
	return Exit{Code: code}, nil
}

// readStatus reads what pid 1 said on its status pipe once it has ended:
// "signal N" when a signal killed the command (0 otherwise).
func (b *Box) readStatus() syscall.Signal {
	if b.status == nil {
		return 0
	}
	defer func() { b.status.Close(); b.status = nil }()
	return readSignal(b.status)
}

// readSignal reads a reaper's status pipe to its end: "signal N" when a
// signal N killed its command (0 otherwise).
func readSignal(f *os.File) syscall.Signal {
	f.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 64)
	n, _ := io.ReadFull(f, buf)
	var sig int
	if _, err := fmt.Sscanf(string(buf[:n]), "signal %d\n", &sig); err != nil || sig <= 0 || sig >= 65 {
		return 0
	}
	return syscall.Signal(sig)
}

// Pid is pid 1's host pid.
func (b *Box) Pid() int { p, _ := b.p.Pid(); return p }

// Signal sends sig to every process of the box (through its cgroup).
func (b *Box) Signal(sig unix.Signal) error { return signalAll(b.c, sig) }

func signalAll(c *libcontainer.Container, sig unix.Signal) error {
	pids, err := c.Processes()
	if err != nil {
		return err
	}
	for _, pid := range pids {
		_ = unix.Kill(pid, sig)
	}
	return nil
}

// Kill ends the box: sig to every process, then SIGKILL to all after grace
// if pid 1 is still there (done is closed when pid 1 has been waited for).
func (b *Box) Kill(grace time.Duration, done <-chan struct{}) {
	_ = b.Signal(unix.SIGTERM)
	select {
	case <-done:
		return
	case <-time.After(grace):
	}
	_ = b.c.Signal(unix.SIGKILL) // pid 1 of the namespace: the kernel kills the rest
	_ = b.Signal(unix.SIGKILL)
}

// Usage reads the cgroup's CPU time and peak memory; call it before Destroy.
// Only the cpu and memory controllers are read (libcontainer's Stats reads
// every controller's: some 60 files more on cgroup v1), through the paths
// the container was made with: the supervisor has left for its own cgroup
// since.
func (b *Box) Usage() (cpuSeconds float64, memPeak uint64) {
	st, err := b.c.State()
	if err != nil {
		return 0, 0
	}
	m, err := manager.NewWithPaths(st.Config.Cgroups, st.CgroupPaths)
	if err != nil {
		return 0, 0
	}
	cs, err := m.Stats(&cgroups.StatsOptions{Controllers: cgroups.CPU | cgroups.Memory})
	if err != nil || cs == nil {
		return 0, 0
	}
	return float64(cs.CpuStats.CpuUsage.TotalUsage) / 1e9, cs.MemoryStats.Usage.MaxUsage
}

// Destroy removes the container and the run's scratch folder.
func (b *Box) Destroy() error {
	err := b.c.Destroy()
	RemoveScratch(b.spec.Run)
	return err
}

// Reap destroys the container of run if it still exists (its supervisor
// is gone), killing whatever runs in it. It reports whether there was one.
func Reap(run string) (bool, error) {
	defer RemoveScratch(run)
	defer RemoveGatewayDir(run)
	c, err := libcontainer.Load(home.ContainerRoot, home.ContainerID(run))
	if err != nil {
		if errors.Is(err, libcontainer.ErrNotExist) || errors.Is(err, os.ErrNotExist) {
			// A supervisor killed between making its container and
			// starting it leaves a state folder with no state: nothing
			// runs in it, and nobody else will remove it.
			os.RemoveAll(home.ContainerDir(run))
			return false, nil
		}
		return false, err
	}
	if st, err := c.Status(); err == nil && st != libcontainer.Stopped {
		_ = c.Signal(unix.SIGKILL)
		_ = signalAll(c, unix.SIGKILL)
		for i := 0; i < 100; i++ {
			if st, err := c.Status(); err != nil || st == libcontainer.Stopped {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return true, c.Destroy()
}

// Running reports whether run's container exists and is not stopped.
func Running(run string) bool {
	c, err := libcontainer.Load(home.ContainerRoot, home.ContainerID(run))
	if err != nil {
		return false
	}
	st, err := c.Status()
	return err == nil && st != libcontainer.Stopped
}

var _ = runs.Record{}

// checkHostPaths refuses, before anything is created, a spec whose rootfs
// or granted folders are missing on the host (libcontainer would fail
// half-way with its own words).
func checkHostPaths(s *Spec) error {
	where := "workers/" + s.Worker + ".toml"
	if s.Rootfs != "" {
		if st, err := os.Stat(s.Rootfs); err != nil || !st.IsDir() {
			return fmt.Errorf("worker %s: rootfs %s is not a folder on this host (fix rootfs in %s)", s.Worker, s.Rootfs, where)
		}
	}
	for _, c := range s.Connections {
		if _, err := os.Stat(c.Path); err != nil {
			why := "does not exist"
			var pe *os.PathError
			if !errors.Is(err, os.ErrNotExist) && errors.As(err, &pe) {
				why = "cannot be reached: " + pe.Err.Error()
			}
			return fmt.Errorf("worker %s: connection %s: host path %s %s (fix or remove it in %s)", s.Worker, c.Name, c.Path, why, where)
		}
	}
	return nil
}
