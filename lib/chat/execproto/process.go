package execproto

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/chat"
)

// session is one run of the bridge program, in its own process group.
//
// Its pipes are our own os.Pipe ends, so that writes take deadlines and
// a read can be ended by closing. The process is waited for without
// being reaped first (watch), so its group id cannot be reused while the
// group is signalled.
type session struct {
	a      *Adapter
	cmd    *exec.Cmd
	pid    int
	stdin  *os.File // write end
	stdout *os.File // read end
	stderr *os.File // read end

	wsem chan struct{}     // one writer at a time (a line is one write)
	msgs chan chat.Inbound // read ahead of Deliver; closed when stdout ends
	quit chan struct{}     // closed by finish: stop handing messages over

	readDone, errDone chan struct{}

	pmu    sync.Mutex
	reaped bool // set (under pmu) before the process is reaped: no more signals

	exited  chan struct{} // closed once the process is reaped
	exitErr error         // why it exited (set before exited closes)

	mu      sync.Mutex
	pending map[string]chan event // Sends waiting, by ref
	over    bool                  // the session ended: no more Sends
	done    chan struct{}         // closed when the session ended
}

// start runs the bridge: argv as is, the environment plus
// ROSTER_CHAT_ACCOUNT, a new process group.
func (a *Adapter) start() (*session, error) {
	cmd := exec.Command(a.cfg.Command[0], a.cfg.Command[1:]...)
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	cmd.Env = append(os.Environ(), "ROSTER_CHAT_ACCOUNT="+a.cfg.Account)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var p [6]*os.File // in r/w, out r/w, err r/w
	for i := 0; i < 6; i += 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(p[:i]...)
			return nil, err
		}
		p[i], p[i+1] = r, w
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p[0], p[3], p[5]
	err := cmd.Start()
	closeAll(p[0], p[3], p[5]) // the child's ends
	if err != nil {
		closeAll(p[1], p[2], p[4])
		return nil, err
	}
	s := &session{
		a: a, cmd: cmd, pid: cmd.Process.Pid, stdin: p[1], stdout: p[2], stderr: p[4],
		wsem: make(chan struct{}, 1), msgs: make(chan chat.Inbound, queueLen), quit: make(chan struct{}),
		readDone: make(chan struct{}), errDone: make(chan struct{}), exited: make(chan struct{}),
		pending: map[string]chan event{}, done: make(chan struct{}),
	}
	go s.watch()
	go s.readStdout()
	go s.readStderr()
	a.log.Info("exec bridge started", "pid", s.pid, "command", a.cfg.Command[0])
	return s, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// watch waits for the process to exit, kills what it left in its group
// (so no two bridges run at once), then reaps it.
func (s *session) watch() {
	var info unix.Siginfo
	var err error
	for {
		err = unix.Waitid(unix.P_PID, s.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	s.pmu.Lock()
	if err == nil { // a zombie: its pid, and so its group's id, is still ours
		_ = unix.Kill(-s.pid, unix.SIGKILL)
	}
	s.reaped = true
	s.pmu.Unlock()
	err = s.cmd.Wait()
	var ee *exec.ExitError
	if err == nil || errors.As(err, &ee) {
		err = errors.New(s.cmd.ProcessState.String()) // "exit status 3", "signal: killed"
	}
	s.exitErr = err
	close(s.exited)
}

// signal signals the bridge's process group, unless it is being reaped.
func (s *session) signal(sig unix.Signal) {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	if !s.reaped {
		_ = unix.Kill(-s.pid, sig)
	}
}

// stop ends the bridge: stdin closed, SIGTERM, and SIGKILL after grace.
func (s *session) stop(grace time.Duration) {
	s.stdin.Close()
	s.signal(unix.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-s.exited:
	case <-t.C:
		s.a.log.Warn("exec bridge did not exit on SIGTERM; killing it", "pid", s.pid, "grace", grace)
		s.signal(unix.SIGKILL)
		<-s.exited
	}
}

// closeStdout ends the stdout reader (a grandchild outside the group may
// hold the pipe open).
func (s *session) closeStdout() { s.stdout.Close() }

// finish ends the session once the process has exited: the readers get
// drain to read what is left, then their pipes are closed; waiting Sends
// fail.
func (s *session) finish(drain time.Duration) {
	close(s.quit)
	for _, r := range []struct {
		f    *os.File
		done chan struct{}
	}{{s.stdout, s.readDone}, {s.stderr, s.errDone}} {
		t := time.NewTimer(drain)
		select {
		case <-r.done:
		case <-t.C:
		}
		t.Stop()
		r.f.Close()
		<-r.done
	}
	s.stdin.Close()
	s.mu.Lock()
	s.over, s.pending = true, nil
	s.mu.Unlock()
	close(s.done)
}

// expect registers a Send waiting for ref's answer.
func (s *session) expect(ref string) (chan event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.over {
		return nil, ErrNotRunning
	}
	ch := make(chan event, 1)
	s.pending[ref] = ch
	return ch, nil
}

func (s *session) forget(ref string) {
	s.mu.Lock()
	delete(s.pending, ref)
	s.mu.Unlock()
}

// answer hands a sent or error line to the Send waiting for its ref.
func (s *session) answer(ev event) {
	s.mu.Lock()
	ch := s.pending[ev.ref]
	delete(s.pending, ev.ref)
	s.mu.Unlock()
	if ch == nil {
		s.a.log.Warn("exec bridge answered a ref no Send waits for", "ref", ev.ref, "type", ev.kind)
		return
	}
	ch <- ev // buffered, and only this reader sends
}

// write writes one line to the bridge's stdin. The write is bounded by
// writeLimit (and ctx's deadline); a bridge that leaves its stdin unread
// that long, or a line left half written, is killed (it restarts).
func (s *session) write(ctx context.Context, line []byte) error {
	select {
	case s.wsem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.exited:
		return ErrNotRunning
	}
	defer func() { <-s.wsem }()
	limit := time.Now().Add(s.a.writeLimit)
	dl := limit
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	_ = s.stdin.SetWriteDeadline(dl)
	n, err := s.stdin.Write(line)
	if err == nil {
		return nil
	}
	if errors.Is(err, os.ErrDeadlineExceeded) && (n > 0 || dl.Equal(limit)) {
		s.a.log.Warn("exec bridge does not read its stdin; killing it", "pid", s.pid, "written", n)
		s.signal(unix.SIGKILL)
	}
	return err
}

// readStdout reads the bridge's lines: messages go to msgs in order,
// answers to their Sends, hello to the nick. A bad line is logged
// (never its text) and skipped.
func (s *session) readStdout() {
	defer close(s.readDone)
	defer close(s.msgs)
	log := s.a.log
	lim := newLimiter(func(n int) { log.Warn("exec bridge: lines skipped without a log line", "count", n) })
	lr := newLineReader(s.stdout, MaxLine)
	for {
		b, err := lr.next()
		if errors.Is(err, ErrLineTooLong) {
			if lim.allow() {
				log.Warn("exec bridge line skipped", "err", fmt.Sprintf("longer than %d bytes", MaxLine))
			}
			continue
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				log.Warn("exec bridge stdout", "err", err)
			}
			return
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		ev, err := decodeLine(b)
		if err != nil {
			if lim.allow() {
				log.Warn("exec bridge line skipped", "err", err, "bytes", len(b))
			}
			continue
		}
		switch {
		case ev.kind == typeMessage:
			select {
			case s.msgs <- ev.msg:
			case <-s.quit:
			}
		case ev.kind == typeHello:
			s.a.setNick(ev.nick)
		case ev.kind == typeError && ev.ref == "":
			log.Warn("exec bridge says", "error", ev.err)
		default:
			s.answer(ev)
		}
	}
}

// maxStderrLine is how much of one stderr line is logged.
const maxStderrLine = 2048

// readStderr logs the bridge's stderr, a line per log entry, each cut
// at maxStderrLine, at most limitLines per limitEvery.
func (s *session) readStderr() {
	defer close(s.errDone)
	log := s.a.log
	lim := newLimiter(func(n int) { log.Warn("exec bridge stderr: lines not logged", "count", n) })
	r := bufio.NewReaderSize(s.stderr, maxStderrLine)
	skipping := false
	for {
		frag, err := r.ReadSlice('\n')
		if !skipping && len(frag) > 0 {
			line := strings.TrimRight(string(frag), "\r\n")
			if err == bufio.ErrBufferFull {
				line += " [cut]"
			}
			if line != "" && lim.allow() {
				log.Info("exec bridge stderr", "line", strings.ToValidUTF8(line, "\uFFFD"))
			}
		}
		skipping = err == bufio.ErrBufferFull
		if err != nil && !skipping {
			return
		}
	}
}

// Log bounds for what a bridge prints.
const (
	limitLines = 100
	limitEvery = 10 * time.Second
)

// limiter allows limitLines per limitEvery window and reports how many
// it refused when the next window opens.
type limiter struct {
	start   time.Time
	used    int
	refused int
	report  func(n int)
}

func newLimiter(report func(int)) *limiter { return &limiter{report: report} }

func (l *limiter) allow() bool {
	now := time.Now()
	if now.Sub(l.start) >= limitEvery {
		if l.refused > 0 {
			l.report(l.refused)
		}
		l.start, l.used, l.refused = now, 0, 0
	}
	if l.used >= limitLines {
		l.refused++
		return false
	}
	l.used++
	return true
}
