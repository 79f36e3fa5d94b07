// Command probe replays, from inside a box, the attacks on the box's pid 1
// and the calls the seccomp profile denies (dispatch-and-box.md,
// Containment). Each check prints "ok NAME" when the attack is refused, or
// "FAIL NAME: what happened" when it worked. Built static by the test and
// run as the worker's command.
package main

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	check := func(name string, err error, want ...unix.Errno) {
		if err == nil {
			fmt.Printf("FAIL %s: allowed\n", name)
			return
		}
		for _, w := range want {
			if err == w {
				fmt.Printf("ok %s (%v)\n", name, err)
				return
			}
		}
		if len(want) == 0 {
			fmt.Printf("ok %s (%v)\n", name, err)
			return
		}
		fmt.Printf("FAIL %s: %v, want %v\n", name, err, want)
	}
	errno := func(_, _ uintptr, e unix.Errno) error {
		if e == 0 {
			return nil
		}
		return e
	}

	// pid 1's status pipe (fd 3) through pidfd_getfd: refused by the
	// seccomp profile, and by pid 1 not being dumpable.
	pidfd, err := unix.PidfdOpen(1, 0)
	if err != nil {
		fmt.Printf("FAIL pidfd_open: %v\n", err)
	} else {
		fd, err := unix.PidfdGetfd(pidfd, 3, 0)
		check("pidfd_getfd", err, unix.EPERM)
		if err == nil { // the attack of issue 17: forge how the command ended
			unix.Write(fd, []byte("signal 9\n"))
		}
	}
	// pid 1's memory, environment and descriptors.
	_, err = unix.Open("/proc/1/mem", unix.O_RDWR, 0)
	check("proc1-mem-write", err, unix.EACCES, unix.EPERM)
	_, err = unix.Open("/proc/1/mem", unix.O_RDONLY, 0)
	check("proc1-mem-read", err, unix.EACCES, unix.EPERM)
	_, err = os.ReadFile("/proc/1/environ")
	check("proc1-environ", unwrap(err), unix.EACCES, unix.EPERM)
	_, err = os.ReadDir("/proc/1/fd")
	check("proc1-fd", unwrap(err), unix.EACCES, unix.EPERM)

	// io_uring: a file descriptor of -1 would be EBADF, a kernel without
	// io_uring ENOSYS; the profile answers EPERM before either.
	var params [120]byte
	check("io_uring_setup", errno(unix.Syscall(unix.SYS_IO_URING_SETUP, 8, uintptr(unsafe.Pointer(&params[0])), 0)), unix.EPERM)
	check("io_uring_enter", errno(unix.Syscall6(unix.SYS_IO_URING_ENTER, ^uintptr(0), 0, 0, 0, 0, 0)), unix.EPERM)
	check("io_uring_register", errno(unix.Syscall6(unix.SYS_IO_URING_REGISTER, ^uintptr(0), 0, 0, 0, 0, 0)), unix.EPERM)

	// A vsock socket (a way out of the network namespace); other families
	// still work.
	_, err = unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0)
	check("socket-af-vsock", err, unix.EPERM)
	if fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0); err != nil {
		fmt.Printf("FAIL socket-af-unix: %v (must stay allowed)\n", err)
	} else {
		unix.Close(fd)
		fmt.Println("ok socket-af-unix allowed")
	}

	// A lease on a store file the worker owns (it would stall the
	// snapshot's open); other fcntl calls still work.
	name := os.Getenv("HOME") + "/store/leased"
	if err := os.WriteFile(name, []byte("x"), 0o644); err != nil {
		fmt.Printf("FAIL lease file: %v\n", err)
	} else if fd, err := unix.Open(name, unix.O_RDONLY, 0); err != nil {
		fmt.Printf("FAIL lease open: %v\n", err)
	} else {
		_, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_RDLCK)
		check("fcntl-setlease", err, unix.EPERM)
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			fmt.Printf("FAIL fcntl-getfd: %v (must stay allowed)\n", err)
		} else {
			fmt.Println("ok fcntl-getfd allowed")
		}
	}

	check("userfaultfd", errno(unix.Syscall(unix.SYS_USERFAULTFD, 0, 0, 0)), unix.EPERM)
	var attr unix.PerfEventAttr
	attr.Size = uint32(unsafe.Sizeof(attr))
	attr.Type = unix.PERF_TYPE_SOFTWARE
	_, err = unix.PerfEventOpen(&attr, 0, -1, -1, 0)
	check("perf_event_open", err, unix.EPERM)
	check("ptrace-attach-pid1", unix.PtraceAttach(1), unix.EPERM)
	fmt.Println("probe done")
}

func unwrap(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
