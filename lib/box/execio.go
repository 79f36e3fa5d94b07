package box

import (
	"io"
	"os"
	"sync"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"
)

// What an exec'd process reads and writes (Containment, "Terminals"): no
// descriptor the operator holds ever enters the box. Without a terminal it
// gets pipes whose other ends this process holds and pumps to and from the
// operator's stdin, stdout and stderr; with one (exec -t), a new
// pseudo-terminal allocated inside the box by the exec's init (the console
// socket, as for a run's terminal), whose master this process holds and
// pumps, with the operator's terminal in raw mode and its window size
// passed on. When the command has ended the pumps drain what is left and
// stop; the host ends are closed, so a process left behind in the box
// holds a pipe or a pty slave that leads nowhere.

// drainIdle is how long output may pause, once the command has ended,
// before the pumps stop, and drainMax how long they go on at most: a
// process left behind that still holds the pipe or the pty slave, even
// one that keeps writing, must not keep the exec from returning.
var (
	drainIdle = 200 * time.Millisecond
	drainMax  = 2 * time.Second
)

// execIO is the host side of an exec'd process's stdio.
type execIO struct {
	r       ExecRequest
	boxEnds []*os.File // given to the process; closed here once it has started
	inW     *os.File   // the pipe (or the master) the operator's stdin goes to
	outs    []*drainer // the host ends read into Stdout and Stderr
	sock    *os.File   // the console socket's host end (terminal)
	master  *os.File   // the pty's master (terminal)
	restore func()     // the operator's terminal mode and SIGWINCH
	pumps   sync.WaitGroup
}

// newExecIO makes the pipes or the console socket and sets them on p.
func newExecIO(r ExecRequest, p *libcontainer.Process) (*execIO, error) {
	x := &execIO{r: r, restore: func() {}}
	if r.Terminal {
		sock, boxEnd, err := consoleSocket()
		if err != nil {
			return nil, err
		}
		x.sock, x.boxEnds = sock, []*os.File{boxEnd}
		p.ConsoleSocket = boxEnd
		if r.Term != nil {
			p.ConsoleHeight, p.ConsoleWidth = winsize(r.Term)
		}
		return x, nil
	}
	if r.Stdin != nil {
		inR, inW, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		p.Stdin, x.inW = inR, inW
		x.boxEnds = append(x.boxEnds, inR)
	}
	for _, o := range []struct {
		w   io.Writer
		set *io.Writer
	}{{r.Stdout, &p.Stdout}, {r.Stderr, &p.Stderr}} {
		if o.w == nil {
			continue
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			x.close()
			return nil, err
		}
		*o.set = pw
		x.boxEnds = append(x.boxEnds, pw)
		x.outs = append(x.outs, &drainer{f: pr, w: o.w})
	}
	return x, nil
}

// started closes the box's ends here and starts the pumps; with a terminal
// it first receives the pty's master from the box.
func (x *execIO) started() error {
	for _, f := range x.boxEnds {
		f.Close()
	}
	x.boxEnds = nil
	if x.sock != nil {
		m, err := recvMaster(x.sock)
		x.sock.Close()
		x.sock = nil
		if err != nil {
			return err
		}
		// Pollable, so that a drain can time out and a close interrupts a read.
		fd, err := unix.Dup(int(m.Fd()))
		m.Close()
		if err != nil {
			return err
		}
		unix.CloseOnExec(fd)
		_ = unix.SetNonblock(fd, true)
		x.master = os.NewFile(uintptr(fd), "pty-master")
		x.inW = x.master
		if x.r.Term != nil {
			x.restore = attachTerminal(x.r.Term, x.master)
		}
		if x.r.Stdout != nil {
			x.outs = append(x.outs, &drainer{f: x.master, w: x.r.Stdout})
		}
	}
	for _, d := range x.outs {
		x.pumps.Add(1)
		go func() { defer x.pumps.Done(); d.run() }()
	}
	if x.inW != nil && x.r.Stdin != nil {
		in, stdin := x.inW, x.r.Stdin
		go func() { // abandoned at its next read once the exec has ended
			_, _ = io.Copy(in, stdin)
			if in != x.master {
				in.Close()
			}
		}()
	}
	return nil
}

// finish drains the output once the command has ended, restores the
// operator's terminal and closes every host end.
func (x *execIO) finish() {
	for _, d := range x.outs {
		d.ending()
	}
	x.pumps.Wait()
	x.restore()
	x.close()
}

func (x *execIO) close() {
	for _, f := range x.boxEnds {
		f.Close()
	}
	for _, f := range []*os.File{x.inW, x.sock, x.master} {
		if f != nil {
			f.Close()
		}
	}
	for _, d := range x.outs {
		d.f.Close()
	}
}

// drainer copies f to w until f ends or, once ending, pauses drainIdle.
type drainer struct {
	f   *os.File
	w   io.Writer
	mu  sync.Mutex
	end time.Time // ending was called: every read has a deadline, none past end
}

func (d *drainer) ending() {
	d.mu.Lock()
	d.end = time.Now().Add(drainMax)
	d.mu.Unlock()
	d.deadline()
}

// deadline sets the next read's deadline once ending was called.
func (d *drainer) deadline() {
	d.mu.Lock()
	end := d.end
	d.mu.Unlock()
	if end.IsZero() {
		return
	}
	t := time.Now().Add(drainIdle)
	if t.After(end) {
		t = end
	}
	_ = d.f.SetReadDeadline(t)
}

func (d *drainer) run() {
	buf := make([]byte, 32<<10)
	for {
		d.deadline()
		n, err := d.f.Read(buf)
		if n > 0 {
			if _, werr := d.w.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // EOF, EIO (a pty whose slaves are all closed), the deadline
			return
		}
	}
}
