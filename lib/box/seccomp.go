package box

import (
	"errors"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/seccomp"
	"golang.org/x/sys/unix"
)

// SeccompBuilt reports whether this binary can apply the box's seccomp
// profile (built with -tags seccomp, as make build does). A box is never
// started without it.
const SeccompBuilt = seccomp.Enabled

// ErrNoSeccomp is returned when the binary was built without seccomp.
var ErrNoSeccomp = errors.New("roster-box was built without seccomp support, and a box never runs without its profile: build it with `make build` (go build -tags seccomp, needs libseccomp-dev)")

// deniedSyscalls are what a worker never needs: they fail with EPERM, every
// other call is allowed (Docker's profile turned around: a short deny list,
// because agents run arbitrary toolchains).
var deniedSyscalls = []string{
	"mount", "umount", "umount2", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick",
	"mount_setattr", "pivot_root", "chroot",
	"unshare", "setns",
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
	"kexec_load", "kexec_file_load", "reboot",
	"init_module", "finit_module", "delete_module", "create_module",
	"bpf", "perf_event_open", "userfaultfd",
	"pidfd_getfd",                                           // another process's descriptors (pid 1's status pipe)
	"io_uring_setup", "io_uring_enter", "io_uring_register", // a syscall path seccomp cannot see into
	"keyctl", "add_key", "request_key",
	"swapon", "swapoff", "acct", "quotactl", "quotactl_fd",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime",
	"open_by_handle_at", "name_to_handle_at",
	"iopl", "ioperm", "lookup_dcookie", "nfsservctl", "vhangup",
	"syslog",
}

// namespaceFlags are the clone flags that would make new namespaces.
const namespaceFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWNET | unix.CLONE_NEWPID |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// seccompProfile is the box's default profile.
func seccompProfile() *configs.Seccomp {
	eperm := uint(unix.EPERM)
	enosys := uint(unix.ENOSYS)
	sc := &configs.Seccomp{DefaultAction: configs.Allow}
	for _, name := range deniedSyscalls {
		sc.Syscalls = append(sc.Syscalls, &configs.Syscall{Name: name, Action: configs.Errno, ErrnoRet: &eperm})
	}
	// clone: deny any namespace flag, one rule per flag (rules on one call
	// are OR-ed). clone3 passes its flags in memory seccomp cannot read: it
	// answers ENOSYS, and libc falls back to clone.
	for f := uint64(1); f != 0; f <<= 1 {
		if f&namespaceFlags == 0 {
			continue
		}
		sc.Syscalls = append(sc.Syscalls, &configs.Syscall{Name: "clone", Action: configs.Errno, ErrnoRet: &eperm,
			Args: []*configs.Arg{{Index: 0, Value: f, ValueTwo: f, Op: configs.MaskEqualTo}}})
	}
	sc.Syscalls = append(sc.Syscalls, &configs.Syscall{Name: "clone3", Action: configs.Errno, ErrnoRet: &enosys})
	// socket(AF_VSOCK): a way to the hypervisor's host past the network
	// namespace. fcntl(F_SETLEASE): a lease on a store file would make the
	// host's snapshot open wait on the box (Containment).
	sc.Syscalls = append(sc.Syscalls,
		&configs.Syscall{Name: "socket", Action: configs.Errno, ErrnoRet: &eperm,
			Args: []*configs.Arg{{Index: 0, Value: unix.AF_VSOCK, Op: configs.EqualTo}}},
		&configs.Syscall{Name: "fcntl", Action: configs.Errno, ErrnoRet: &eperm,
			Args: []*configs.Arg{{Index: 1, Value: unix.F_SETLEASE, Op: configs.EqualTo}}})
	return sc
}
