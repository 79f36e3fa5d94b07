package irc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roster-sh/roster/lib/chat"
)

// Defaults of the Adapter's tunables (a zero field means its default).
const (
	DefaultBurst       = 4
	DefaultEvery       = 500 * time.Millisecond
	DefaultMinBackoff  = time.Second
	DefaultMaxBackoff  = 60 * time.Second
	DefaultStableAfter = 60 * time.Second
	DefaultTimeout     = 20 * time.Second
	DefaultKeepAlive   = 60 * time.Second
)

// Adapter is one IRC account (chat.Adapter). Make it with New; set the
// exported tunables, if at all, before Run.
type Adapter struct {
	// Flood control: Burst lines at once, then one line per Every.
	Burst int
	Every time.Duration
	// Reconnect backoff: MinBackoff doubling up to MaxBackoff, back to
	// MinBackoff after a connection that lasted StableAfter.
	MinBackoff, MaxBackoff, StableAfter time.Duration
	// Timeout bounds dialing, registration, each write and the wait for a
	// PONG; a PING is sent every KeepAlive (KeepAlive ≥ Timeout).
	Timeout, KeepAlive time.Duration

	cfg     chat.Config
	log     *slog.Logger
	nick    string // the configured nick
	dial    string // host:port dialed
	useTLS  bool
	tlsConf *tls.Config
	rooms   []string // the rooms among cfg.Chats, as configured

	// dialHook, when set (tests), dials instead of a net.Dialer.
	dialHook func(ctx context.Context, network, addr string) (net.Conn, error)

	running atomic.Bool
	mu      sync.Mutex
	live    *session          // the registered connection, nil when down
	seen    map[string]string // verified account -> the nick last seen using it
	bucket  bucket
	sendSem chan struct{} // one Send at a time, so a split reply stays together
}

var _ chat.Adapter = (*Adapter)(nil)

// fatalError is an error Run returns instead of reconnecting.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

func fatalf(format string, args ...any) error {
	return &fatalError{fmt.Errorf(format, args...)}
}

// New makes the adapter for cfg (Protocol "irc"). It refuses, without
// dialing anything, an Address that is not "nick@host[:port]", TLS
// "starttls" (IRC has no STARTTLS that roster supports: use "require"),
// TLS "off" to anything but a loopback address, and an unreadable CAFile.
func New(cfg chat.Config) (*Adapter, error) {
	a := &Adapter{cfg: cfg, log: cfg.Log, seen: map[string]string{}, sendSem: make(chan struct{}, 1)}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.log = a.log.With("account", cfg.Account, "protocol", "irc")
	if err := a.parse(); err != nil {
		return nil, fmt.Errorf("irc account %s: %w", cfg.Account, err)
	}
	for _, c := range cfg.Chats {
		if isRoomName(c) {
			a.rooms = append(a.rooms, c)
		}
	}
	return a, nil
}

func (a *Adapter) parse() error {
	nick, hostport, ok := strings.Cut(a.cfg.Address, "@")
	if !ok || nick == "" || hostport == "" {
		return fmt.Errorf("address %q: want nick@host:port (e.g. dobby@irc.example.org:6697)", a.cfg.Address)
	}
	if !validNick(nick) {
		return fmt.Errorf("address %q: %q is not a valid IRC nick", a.cfg.Address, nick)
	}
	a.nick = nick
	name, _, err := net.SplitHostPort(hostport)
	if err != nil {
		name = unbracket(hostport)
	}
	if a.cfg.Server != "" { // dial elsewhere; the certificate is still the Address host's
		hostport = a.cfg.Server
	}
	switch a.cfg.TLS {
	case "require", "":
		a.useTLS = true
	case "starttls":
		return errors.New(`tls = "starttls" is not supported for IRC (servers offer TLS on its own port): use tls = "require" and the TLS port (usually 6697)`)
	case "off":
	default:
		return fmt.Errorf(`tls = %q: want "require" or "off" (loopback only)`, a.cfg.TLS)
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = unbracket(hostport), "6697"
		if !a.useTLS {
			port = "6667"
		}
	}
	if host == "" || port == "" {
		return fmt.Errorf("address %q: want nick@host:port", a.cfg.Address)
	}
	if !a.useTLS && !isLoopbackHost(host) {
		return fmt.Errorf(`tls = "off" is for loopback only (127.0.0.1, ::1, localhost), not %q: use tls = "require"`, host)
	}
	a.dial = net.JoinHostPort(host, port)
	if a.useTLS {
		a.tlsConf = &tls.Config{ServerName: name, MinVersion: tls.VersionTLS12}
		if a.cfg.CAFile != "" {
			pemBytes, err := os.ReadFile(a.cfg.CAFile)
			if err != nil {
				return fmt.Errorf("ca_file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pemBytes) {
				return fmt.Errorf("ca_file %s: no PEM certificate in it", a.cfg.CAFile)
			}
			a.tlsConf.RootCAs = pool
		}
	}
	return nil
}

func unbracket(h string) string { return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]") }

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validNick is a light check (RFC 2812 nicks: no spaces, no prefix
// characters, no "~", which marks unverified identities in roster).
func validNick(n string) bool {
	if n == "" || len(n) > 64 || strings.ContainsAny(n, " ,*?!@:.~#&$%+\x00\r\n\x01\t") {
		return false
	}
	return !(n[0] >= '0' && n[0] <= '9') && n[0] != '-'
}

func isRoomName(c string) bool {
	return len(c) > 1 && (c[0] == '#' || c[0] == '&')
}

// Nick is the nick the account has now (the configured one until
// connected, or a fallback "nick_0"... while that one is taken).
func (a *Adapter) Nick() string {
	a.mu.Lock()
	s := a.live
	a.mu.Unlock()
	if s != nil {
		if n := s.conn.CurrentNick(); n != "" {
			return n
		}
	}
	return a.nick
}

func (a *Adapter) tunables() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&a.Every, DefaultEvery)
	def(&a.MinBackoff, DefaultMinBackoff)
	def(&a.MaxBackoff, DefaultMaxBackoff)
	def(&a.StableAfter, DefaultStableAfter)
	def(&a.Timeout, DefaultTimeout)
	def(&a.KeepAlive, DefaultKeepAlive)
	if a.KeepAlive < a.Timeout {
		a.KeepAlive = a.Timeout
	}
	if a.Burst <= 0 {
		a.Burst = DefaultBurst
	}
	a.bucket.init(a.Burst, a.Every)
}

// Run connects, joins the rooms and delivers messages until ctx ends,
// reconnecting with backoff. It returns early only for what cannot work:
// a refused SASL login, a password set for a server without SASL.
func (a *Adapter) Run(ctx context.Context, deliver chat.Deliver) error {
	if !a.running.CompareAndSwap(false, true) {
		return errors.New("irc: Run is already running for this adapter")
	}
	defer a.running.Store(false)
	a.tunables()
	wait := a.MinBackoff
	for {
		up, err := a.session(ctx, deliver)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var fe *fatalError
		if errors.As(err, &fe) {
			a.log.Error("irc account cannot work", "err", err)
			return fmt.Errorf("irc account %s: %w", a.cfg.Account, fe.err)
		}
		if up >= a.StableAfter {
			wait = a.MinBackoff
		}
		a.log.Warn("irc disconnected; reconnecting", "server", a.dial, "err", err, "in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, a.MaxBackoff)
	}
}

func (a *Adapter) setLive(s *session) {
	a.mu.Lock()
	a.live = s
	if s == nil {
		clear(a.seen) // nicks seen on a lost connection prove nothing now
	}
	a.mu.Unlock()
}
