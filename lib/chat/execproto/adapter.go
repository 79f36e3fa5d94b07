package execproto

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/chat"
)

// ErrNotRunning is Send's error while the bridge is not running (not yet
// started, exited, restarting): the caller retries later.
var ErrNotRunning = errors.New("exec bridge not running")

// Timings of the adapter (doc.go); tests shorten them on the value.
const (
	BackoffMin  = time.Second      // the first restart's wait
	BackoffMax  = time.Minute      // the longest wait
	Steady      = time.Minute      // a bridge that ran this long restarts after BackoffMin again
	SendTimeout = 30 * time.Second // Send's bound on the answer
	Grace       = 5 * time.Second  // SIGTERM to SIGKILL
	writeLimit  = 10 * time.Second // a write to a bridge that does not read its stdin
	drainLimit  = 2 * time.Second  // reading what a bridge printed before it exited
	queueLen    = 16               // messages read ahead of Deliver
)

// Adapter is one exec account: the operator's bridge program, run and
// restarted by Run, spoken to in JSON lines (doc.go).
type Adapter struct {
	cfg chat.Config
	log *slog.Logger

	mu   sync.Mutex
	cur  *session // the running bridge; nil between runs
	nick string   // from the last hello line; "" = the account name

	running atomic.Bool
	refs    atomic.Uint64

	backoffMin, backoffMax, steady, sendTimeout, grace, drain, writeLimit time.Duration
}

var _ chat.Adapter = (*Adapter)(nil)

// New makes the adapter of cfg; cfg.Command is the bridge (argv, no
// shell).
func New(cfg chat.Config) (*Adapter, error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, fmt.Errorf("chat account %s: protocol exec needs a command (the bridge program and its arguments)", cfg.Account)
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Adapter{
		cfg: cfg, log: log.With("account", cfg.Account),
		backoffMin: BackoffMin, backoffMax: BackoffMax, steady: Steady,
		sendTimeout: SendTimeout, grace: Grace, drain: drainLimit, writeLimit: writeLimit,
	}, nil
}

// Nick is the name from the bridge's last hello line, else the account's.
func (a *Adapter) Nick() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.nick != "" {
		return a.nick
	}
	return a.cfg.Account
}

// Run runs the bridge until ctx ends, restarting it with backoff when it
// exits. It returns ctx.Err(), or an error at once when the program cannot
// be started at all (not found, not executable).
func (a *Adapter) Run(ctx context.Context, deliver chat.Deliver) error {
	if !a.running.CompareAndSwap(false, true) {
		return errors.New("exec adapter: Run called twice")
	}
	defer a.running.Store(false)
	wait := a.backoffMin
	for ctx.Err() == nil {
		ran, err := a.runOnce(ctx, deliver)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && cannotStart(err) {
			return fmt.Errorf("exec bridge %q: %w (fix [chat.%s] command)", a.cfg.Command[0], err, a.cfg.Account)
		}
		wait = nextWait(wait, ran, a.backoffMin, a.backoffMax, a.steady)
		a.log.Warn("exec bridge ended; restarting", "err", err, "ran", ran.Round(time.Millisecond), "in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, a.backoffMax)
	}
	return ctx.Err()
}

// nextWait is the wait before a restart: cur, unless the bridge ran
// steady long, which starts the doubling over.
func nextWait(cur, ran, lo, hi, steady time.Duration) time.Duration {
	if ran >= steady {
		return lo
	}
	return min(max(cur, lo), hi)
}

// cannotStart tells a start error the operator must fix from a passing
// one (no memory, too many processes).
func cannotStart(err error) bool {
	return errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) ||
		errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.ENOEXEC) || errors.Is(err, exec.ErrDot)
}

// runOnce runs the bridge once: it delivers what it prints, one message
// at a time, until it exits or ctx ends (then it is stopped). ran is how
// long it ran; err is why it ended (nil when ctx ended).
func (a *Adapter) runOnce(ctx context.Context, deliver chat.Deliver) (ran time.Duration, err error) {
	s, err := a.start()
	if err != nil {
		return 0, err
	}
	started := time.Now()
	a.mu.Lock()
	a.cur = s
	a.mu.Unlock()
	defer func() {
		a.detach(s)
		s.finish(a.drain)
		ran = time.Since(started)
	}()
	exited := s.exited
	for {
		select {
		case <-ctx.Done():
			a.detach(s)
			s.stop(a.grace)
			return 0, nil
		case <-exited:
			// What it printed before exiting is still read (for drain
			// at most), then the session ends with the reader.
			a.detach(s)
			exited = nil
			time.AfterFunc(a.drain, s.closeStdout)
		case m, ok := <-s.msgs:
			if !ok {
				a.detach(s)
				if exited != nil && !a.exitsSoon(s) {
					a.log.Warn("exec bridge closed its stdout; stopping it")
					s.stop(a.grace)
				}
				<-s.exited
				return 0, s.exitErr
			}
			if ctx.Err() != nil {
				continue // the ctx case ends the session; m is not acknowledged
			}
			a.deliverOne(ctx, s, deliver, m)
		}
	}
}

// exitsSoon tells whether s exits within drain (stdout's end is usually
// seen just before the exit).
func (a *Adapter) exitsSoon(s *session) bool {
	t := time.NewTimer(a.drain)
	defer t.Stop()
	select {
	case <-s.exited:
		return true
	case <-t.C:
		return false
	}
}

// deliverOne hands m to deliver and acknowledges it to the bridge only
// once deliver said it is durable.
func (a *Adapter) deliverOne(ctx context.Context, s *session, deliver chat.Deliver, m chat.Inbound) {
	if err := deliver(ctx, m); err != nil {
		a.log.Warn("exec bridge message not taken (not acknowledged)", "id", m.NetID, "err", err)
		return
	}
	if err := s.write(ctx, encodeLine(ackLine{Type: "ack", ID: m.NetID})); err != nil {
		a.log.Debug("exec bridge ack not written", "id", m.NetID, "err", err)
	}
}

// detach makes s no longer the running bridge: Sends fail fast from now.
func (a *Adapter) detach(s *session) {
	a.mu.Lock()
	if a.cur == s {
		a.cur = nil
	}
	a.mu.Unlock()
}

func (a *Adapter) setNick(n string) {
	a.mu.Lock()
	a.nick = n
	a.mu.Unlock()
}

// Send writes a send line to the bridge and waits for its answer (at most
// SendTimeout). The text goes as is: the bridge makes it safe for its
// network.
func (a *Adapter) Send(ctx context.Context, chatID, text string) (string, error) {
	if err := checkField("chat", chatID, MaxField); err != nil {
		return "", fmt.Errorf("exec send: %w", err)
	}
	a.mu.Lock()
	s := a.cur
	a.mu.Unlock()
	if s == nil {
		return "", ErrNotRunning
	}
	ctx, cancel := context.WithTimeout(ctx, a.sendTimeout)
	defer cancel()
	ref := strconv.FormatUint(a.refs.Add(1), 10)
	answer, err := s.expect(ref)
	if err != nil {
		return "", err
	}
	defer s.forget(ref)
	if err := s.write(ctx, encodeLine(sendLine{Type: "send", Chat: chatID, Text: text, Ref: ref})); err != nil {
		return "", fmt.Errorf("exec send: %w", err)
	}
	select {
	case ans := <-answer:
		if ans.err != "" {
			return "", fmt.Errorf("exec bridge: %s", ans.err)
		}
		if ans.id == "" {
			// The bridge's network has no ids: a unique one stands in.
			ans.id = "exec-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + ref
		}
		return ans.id, nil
	case <-s.done:
		return "", fmt.Errorf("exec bridge exited before answering: %w", ErrNotRunning)
	case <-ctx.Done():
		return "", fmt.Errorf("exec bridge did not answer: %w", ctx.Err())
	}
}
