package box

import (
	"fmt"
	"io"
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
)

// A box run with a terminal (an ad-hoc run whose stdin is one) gets a
// pseudo-terminal of its own: the container's init allocates it inside
// the box (libcontainer's console socket), mounts it at /dev/console and
// makes it the command's stdin, stdout and stderr; the supervisor gets the
// master side and copies between it and the user's terminal, which it
// puts in raw mode for the run and restores afterwards.

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// consoleSocket is a connected pair: the box's end goes to the container's
// init, which sends the pty master back through it.
func consoleSocket() (host, box *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("console socket: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "console-host"), os.NewFile(uintptr(fds[1]), "console-box"), nil
}

// recvMaster reads the pty master the init sent over the console socket.
func recvMaster(sock *os.File) (*os.File, error) {
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("receive the box's terminal: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("receive the box's terminal: no descriptor")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, fmt.Errorf("receive the box's terminal: no descriptor")
	}
	return os.NewFile(uintptr(fds[0]), string(buf[:n])), nil
}

// winsize is the terminal's size (zero when unknown).
func winsize(f *os.File) (rows, cols uint16) {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0
	}
	return ws.Row, ws.Col
}

// attachTerminal puts term in raw mode and keeps master's size in step with
// it (SIGWINCH); the returned function undoes both.
func attachTerminal(term, master *os.File) func() {
	fd := int(term.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return func() {}
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	_ = unix.IoctlSetTermios(fd, unix.TCSETS, &raw)

	resize := func() {
		if ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil {
			_ = unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, ws)
		}
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, unix.SIGWINCH)
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-winch:
				resize()
			case <-stop:
				return
			}
		}
	}()
	return func() {
		signal.Stop(winch)
		close(stop)
		_ = unix.IoctlSetTermios(fd, unix.TCSETS, old)
	}
}

// EscapeHelp is what the escape does, for a run's terminal.
const EscapeHelp = "~. at the start of a line ends the box; ~~ sends one ~"

// escapeCopy copies a terminal's keystrokes to the box's pty as ssh does,
// watching for its escape: "~." at the start of a line (after Enter, or
// first) calls onEscape and stops copying; "~~" there sends one "~"; a "~"
// followed by anything else is sent as typed. It returns when src ends,
// dst fails, or at the escape.
func escapeCopy(dst io.Writer, src io.Reader, onEscape func()) {
	buf := make([]byte, 4096)
	lineStart, tilde := true, false
	for {
		n, err := src.Read(buf)
		out := make([]byte, 0, n+1)
		for _, c := range buf[:n] {
			switch {
			case tilde:
				tilde = false
				if c == '.' {
					if len(out) > 0 {
						_, _ = dst.Write(out)
					}
					onEscape()
					return
				}
				if c != '~' {
					out = append(out, '~')
				}
				out = append(out, c)
			case lineStart && c == '~':
				tilde = true
				continue
			default:
				out = append(out, c)
			}
			lineStart = c == '\r' || c == '\n'
		}
		if len(out) > 0 {
			if _, werr := dst.Write(out); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
