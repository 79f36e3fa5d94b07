package box

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/opencontainers/cgroups"
	_ "github.com/opencontainers/cgroups/devices" // device rules: the v1 and v2 (eBPF) managers
	devconf "github.com/opencontainers/cgroups/devices/config"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/agent"
	"github.com/roster-sh/roster/lib/home"
)

const (
	rwFlags  = unix.MS_BIND | unix.MS_REC | unix.MS_NOSUID | unix.MS_NODEV
	roFlags  = rwFlags | unix.MS_RDONLY
	tmpFlags = unix.MS_NOSUID | unix.MS_NODEV
)

// containerConfig is the libcontainer configuration of the box s describes.
// rootfs is the root (generated or the spec's), etc and self the run's
// scratch folders.
func containerConfig(s *Spec, rootfs, etc, self string) *configs.Config {
	uid := fmt.Sprint(s.UID)
	bind := func(src, dst string, ro bool) *configs.Mount {
		f := rwFlags
		if ro {
			f = roFlags
		}
		return &configs.Mount{Source: src, Destination: dst, Device: "bind", Flags: f}
	}
	mounts := []*configs.Mount{
		{Source: "proc", Destination: "/proc", Device: "proc", Flags: unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC},
		{Source: "tmpfs", Destination: "/dev", Device: "tmpfs", Flags: unix.MS_NOSUID | unix.MS_STRICTATIME, Data: "mode=755,size=65536k"},
		{Source: "devpts", Destination: "/dev/pts", Device: "devpts", Flags: unix.MS_NOSUID | unix.MS_NOEXEC, Data: "newinstance,ptmxmode=0666,mode=0620"},
		{Source: "shm", Destination: "/dev/shm", Device: "tmpfs", Flags: tmpFlags, Data: "mode=1777,size=65536k"},
	}
	if s.Rootfs == "" {
		mounts = append(mounts, &configs.Mount{Source: "/usr", Destination: "/usr", Device: "bind", Flags: roFlags})
	}
	mounts = append(mounts,
		bind(etc, "/etc", true),
		&configs.Mount{Source: "tmpfs", Destination: "/tmp", Device: "tmpfs", Flags: tmpFlags, Data: "mode=1777"},
		&configs.Mount{Source: "tmpfs", Destination: "/run", Device: "tmpfs", Flags: tmpFlags, Data: "mode=755"},
		&configs.Mount{Source: "tmpfs", Destination: BoxHome, Device: "tmpfs", Flags: tmpFlags, Data: "mode=755,uid=" + uid + ",gid=" + uid},
		bind(s.Store, BoxStore, false),
		bind(s.Locks, BoxLocks, false),
	)
	if _, err := os.Stat("/etc/ssl/certs"); err == nil {
		mounts = append(mounts, bind("/etc/ssl/certs", "/etc/ssl/certs", true))
	}
	if s.Channel != "" && s.ChannelStore != "" {
		mounts = append(mounts, bind(s.ChannelStore, BoxChannel, false))
	}
	if s.Channel != "" && s.ChannelLog != "" {
		mounts = append(mounts, bind(s.ChannelLog, BoxChanLog, true))
	}
	mounts = append(mounts,
		bind(self, BoxSelf, true),
		bind(s.View, BoxSelf+"/view", true),
		bind(s.Runs, BoxSelf+"/runs", true),
		bind(filepath.Join(s.RunDir, "outbox"), BoxOutbox, false),
	)
	if s.AgentDir != "" {
		mounts = append(mounts, bind(s.AgentDir, agent.BoxAgentDir, false))
	}
	for _, c := range s.Connections {
		mounts = append(mounts, bind(c.Path, BoxHome+"/"+c.At, c.Mode != "rw"))
	}
	if s.Network == "gateway" {
		// read-only: the box may connect to the socket, never replace it
		mounts = append(mounts, bind(gatewayDir(s.Run), BoxGatewayDir, true))
	}
	tools := make([]string, 0, len(s.Tools))
	for t := range s.Tools {
		tools = append(tools, t)
	}
	sort.Strings(tools)
	for _, t := range tools {
		mounts = append(mounts, bind(s.Tools[t], BoxBin+"/"+t, true))
	}

	ns := configs.Namespaces{{Type: configs.NEWNS}, {Type: configs.NEWPID}, {Type: configs.NEWIPC},
		{Type: configs.NEWUTS}, {Type: configs.NEWCGROUP}}
	var networks []*configs.Network
	if s.Network != "host" {
		ns = append(ns, configs.Namespace{Type: configs.NEWNET})
		networks = []*configs.Network{{Type: "loopback", Address: "127.0.0.1/0", Gateway: "localhost"}}
	}

	res := &cgroups.Resources{}
	if s.Memory > 0 {
		res.Memory = s.Memory
	}
	if s.Pids > 0 {
		p := s.Pids
		res.PidsLimit = &p
	}
	if s.CPUs > 0 {
		res.CpuPeriod = 100000
		res.CpuQuota = int64(s.CPUs * 100000)
	}
	res.Devices = DeviceRules()
	return &configs.Config{
		Rootfs:          rootfs,
		Readonlyfs:      true,
		NoNewPrivileges: true,
		Capabilities:    &configs.Capabilities{}, // none in any set
		Namespaces:      ns,
		Networks:        networks,
		Mounts:          mounts,
		Devices:         deviceNodes(),
		Hostname:        hostname(s),
		Seccomp:         seccompProfile(),
		Cgroups:         boxCgroup(s.Run, res), // never inside the supervisor's (hostcg.go)
		MaskPaths: []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
			"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware"},
		ReadonlyPaths:   []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		RootPropagation: unix.MS_PRIVATE | unix.MS_REC,
	}
}

// boxEnv is the box's whole environment: the fixed variables, then the
// spec's pass_env (s.Env).
func boxEnv(s *Spec) []string {
	env := []string{
		"HOME=" + BoxHome,
		"PATH=" + BoxPath,
		"ROSTER_WORKER=" + s.Worker,
		"ROSTER_RUN=" + s.Run,
		"ROSTER_TASK=" + s.Task,
		"ROSTER_TASKS_FILE=" + BoxSchedule,
		"ROSTER_BRIEFING=" + BoxBriefing,
		"ROSTER_OUTBOX=" + BoxOutbox,
	}
	if s.Network == "gateway" {
		env = append(env, gatewayEnv()...)
	}
	if len(s.GitConfig) > 0 {
		env = append(env, "GIT_CONFIG_GLOBAL="+BoxGitConfig, "GIT_TERMINAL_PROMPT=0")
	}
	return append(env, s.Env...)
}

// createContainer makes the container (state under home.ContainerRoot).
func createContainer(s *Spec, cfg *configs.Config) (*libcontainer.Container, error) {
	if err := os.MkdirAll(home.ContainerRoot, 0o700); err != nil {
		return nil, err
	}
	c, err := libcontainer.Create(home.ContainerRoot, home.ContainerID(s.Run), cfg)
	if err != nil {
		return nil, fmt.Errorf("create box %s: %w", home.ContainerID(s.Run), err)
	}
	return c, nil
}

// allowedDevices are the character devices a box may use (major, minor;
// devconf.Wildcard = any minor): null, zero, full, random, urandom, tty,
// ptmx and the pts terminals. runc's default list also allows mknod of any
// device and /dev/net/tun; a box gets neither.
var allowedDevices = [][2]int64{{1, 3}, {1, 5}, {1, 7}, {1, 8}, {1, 9}, {5, 0}, {5, 2}, {136, devconf.Wildcard}}

// deviceNodes are the nodes made in the box's /dev (mode 0666, root's):
// null, zero, full, random, urandom and tty (what runc makes by default;
// ptmx is a link into /dev/pts).
func deviceNodes() []*devconf.Device {
	nodes := []struct {
		path         string
		major, minor int64
	}{{"/dev/null", 1, 3}, {"/dev/zero", 1, 5}, {"/dev/full", 1, 7}, {"/dev/random", 1, 8}, {"/dev/urandom", 1, 9}, {"/dev/tty", 5, 0}}
	var ds []*devconf.Device
	for _, n := range nodes {
		ds = append(ds, &devconf.Device{Path: n.path, FileMode: 0o666,
			Rule: devconf.Rule{Type: devconf.CharDevice, Major: n.major, Minor: n.minor, Permissions: "rwm", Allow: true}})
	}
	return ds
}

// DeviceRules is the box's device cgroup: deny everything, then allow
// read, write and mknod of the allowedDevices (v1: devices.deny and
// devices.allow; v2: an eBPF program, both through the devices package).
func DeviceRules() []*devconf.Rule {
	rules := []*devconf.Rule{{Type: devconf.WildcardDevice, Major: devconf.Wildcard, Minor: devconf.Wildcard,
		Permissions: "rwm", Allow: false}}
	for _, d := range allowedDevices {
		rules = append(rules, &devconf.Rule{Type: devconf.CharDevice, Major: d[0], Minor: d[1], Permissions: "rwm", Allow: true})
	}
	return rules
}
