package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// checkHost: root, cgroups, namespaces, seccomp.
func checkHost(r *Report, o Options) {
	if os.Geteuid() != 0 {
		r.add("host", Problem, "", fmt.Sprintf("running as uid %d: boxes are made as root (their workers' uids, cgroups, mounts)", os.Geteuid()),
			"run roster as root (sudo, or the systemd units in contrib/systemd)")
	} else {
		r.add("host", OK, "", "running as root", "")
	}
	checkCgroups(r, o)
	var missing []string
	for _, ns := range []string{"mnt", "pid", "net", "ipc", "uts", "cgroup"} {
		if _, err := os.Stat(filepath.Join(o.ProcRoot, "self", "ns", ns)); err != nil {
			missing = append(missing, ns)
		}
	}
	if len(missing) > 0 {
		r.add("host", Problem, "", "the kernel has no "+strings.Join(missing, ", ")+" namespaces: a box needs mount, pid, net, ipc, uts and cgroup namespaces",
			"use a kernel built with CONFIG_NAMESPACES and each *_NS option (every distribution kernel is)")
	} else {
		r.add("host", OK, "", "namespaces: mnt, pid, net, ipc, uts, cgroup", "")
	}
	if _, err := os.Stat(filepath.Join(o.ProcRoot, "sys", "kernel", "seccomp", "actions_avail")); err != nil {
		r.add("host", Problem, "", "the kernel offers no seccomp filters: every box runs under one",
			"use a kernel built with CONFIG_SECCOMP_FILTER")
	} else {
		r.add("host", OK, "", "seccomp filters available", "")
	}
}

// checkCgroups: v2 with its controllers, or v1 with its hierarchies.
// memory and pids bound every box; cpu carries host_cpus.
func checkCgroups(r *Report, o Options) {
	var st unix.Statfs_t
	if err := unix.Statfs(o.CgroupRoot, &st); err != nil {
		r.add("cgroup", Problem, "", fmt.Sprintf("no cgroup filesystem at %s: %v", o.CgroupRoot, err),
			"mount cgroup2 there (mount -t cgroup2 none "+o.CgroupRoot+"), or boot with systemd, which does")
		return
	}
	have := map[string]bool{}
	version := "v1"
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		version = "v2"
		data, err := os.ReadFile(filepath.Join(o.CgroupRoot, "cgroup.controllers"))
		if err != nil {
			r.add("cgroup", Problem, "", fmt.Sprintf("cgroup v2 at %s: %v", o.CgroupRoot, err), "")
			return
		}
		for _, c := range strings.Fields(string(data)) {
			have[c] = true
		}
	} else {
		ents, _ := os.ReadDir(o.CgroupRoot)
		for _, e := range ents {
			for _, c := range strings.Split(e.Name(), ",") {
				have[c] = true
			}
		}
	}
	fix := "enable it in the kernel's command line (cgroup_enable=memory) or with systemd (v2: boot with systemd.unified_cgroup_hierarchy=1)"
	var lacking []string
	for _, c := range []string{"memory", "pids"} {
		if !have[c] {
			lacking = append(lacking, c)
		}
	}
	switch {
	case len(lacking) > 0:
		r.add("cgroup", Problem, "", fmt.Sprintf("cgroup %s without the %s controller: every box is bound by memory and pids", version, strings.Join(lacking, " and ")), fix)
	case !have["cpu"]:
		r.add("cgroup", Warning, "", fmt.Sprintf("cgroup %s without the cpu controller: host_cpus and cpu bounds cannot be enforced", version), fix)
	default:
		r.add("cgroup", OK, "", fmt.Sprintf("cgroup %s: memory, pids and cpu controllers", version), "")
	}
}

// checkInotify: the dispatcher watches one folder per worker and a few
// more; every program that follows files (roster-chat, live sessions,
// --follow) takes an inotify instance.
func checkInotify(r *Report, o Options, workers int) {
	dir := filepath.Join(o.ProcRoot, "sys", "fs", "inotify")
	watches, err1 := readInt(filepath.Join(dir, "max_user_watches"))
	instances, err2 := readInt(filepath.Join(dir, "max_user_instances"))
	if err1 != nil || err2 != nil {
		r.add("host", Warning, "", "cannot read the inotify limits: the dispatcher falls back to polling", "")
		return
	}
	want := workers + 64
	fix := "sysctl fs.inotify.max_user_watches=%d (and in /etc/sysctl.d/ to keep it); docs/dispatch-and-box.md \"At scale\""
	if watches < want {
		r.add("host", Warning, "", fmt.Sprintf("inotify max_user_watches is %d; %d workers want %d: the rest are polled (slower to wake)", watches, workers, want),
			fmt.Sprintf(fix, 2*want))
	} else if instances < 32 {
		r.add("host", Warning, "", fmt.Sprintf("inotify max_user_instances is %d: the dispatcher, roster-chat, live chat sessions and every --follow take one", instances),
			"sysctl fs.inotify.max_user_instances=128")
	} else {
		r.add("host", OK, "", fmt.Sprintf("inotify: %d watches for %d workers, %d instances", watches, workers, instances), "")
	}
}

func readInt(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}
