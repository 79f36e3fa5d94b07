package chattest

// A real Prosody (Debian's /usr/bin/prosody) for tests of the XMPP
// adapter: everything it needs lives in t.TempDir(), it listens on
// 127.0.0.1 only, s2s is off, and it is stopped on t.Cleanup.

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ProsodyBin is the server the harness runs; prosodyctl is beside it.
const ProsodyBin = "/usr/bin/prosody"

// Prosody is one running server. Accounts live on Domain, rooms on
// MUCDomain (non-anonymous, persistent and unlocked by default, with
// their own archive), and every account has a MAM archive and stream
// management.
type Prosody struct {
	Domain    string // "localhost"
	MUCDomain string // "rooms.localhost"
	Addr      string // 127.0.0.1:port, STARTTLS offered (plaintext allowed: loopback tests)
	TLSAddr   string // 127.0.0.1:port, TLS from the first byte
	CAFile    string // PEM of the self-signed certificate the server uses
	Dir       string // the temp dir holding config, data and log
	Config    string // the config file
	LogFile   string

	t   testing.TB
	mu  sync.Mutex
	cmd *exec.Cmd
	// exited is closed when the current process has been reaped.
	exited chan struct{}
}

// StartProsody starts a fresh server, or skips the test when Prosody is
// not installed.
func StartProsody(t testing.TB) *Prosody {
	t.Helper()
	if _, err := os.Stat(ProsodyBin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI installs it (.ci/run): %s missing", ProsodyBin)
		}
		t.Skipf("prosody is not installed (%s missing; apt-get install prosody)", ProsodyBin)
	}
	dir := t.TempDir()
	p := &Prosody{
		Domain:    "localhost",
		MUCDomain: "rooms.localhost",
		Dir:       dir,
		Config:    filepath.Join(dir, "prosody.cfg.lua"),
		LogFile:   filepath.Join(dir, "prosody.log"),
		CAFile:    filepath.Join(dir, "cert.pem"),
		t:         t,
	}
	if err := prosodyWriteCert(dir, p.CAFile, filepath.Join(dir, "key.pem")); err != nil {
		t.Fatalf("prosody harness: certificate: %v", err)
	}
	ports, err := prosodyFreePorts(2)
	if err != nil {
		t.Fatalf("prosody harness: %v", err)
	}
	p.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	p.TLSAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.Config, []byte(p.configText(ports[0], ports[1])), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
	if err := p.start(); err != nil {
		t.Fatalf("prosody harness: %v\n%s", err, p.logTail())
	}
	return p
}

func (p *Prosody) configText(c2s, tls int) string {
	q := strconv.Quote
	d := p.Dir
	ssl := fmt.Sprintf("{ certificate = %s; key = %s; }",
		q(filepath.Join(d, "cert.pem")), q(filepath.Join(d, "key.pem")))
	return fmt.Sprintf(`-- written by lib/chat/chattest
pidfile = %[1]s
daemonize = false
run_as_root = true
data_path = %[2]s
log = { { levels = { min = "debug" }, to = "file", filename = %[3]s } }
interfaces = { "127.0.0.1" }
local_interfaces = { "127.0.0.1" }
c2s_ports = { %[4]d }
c2s_direct_tls_ports = { %[5]d }
c2s_direct_tls_ssl = %[6]s
ssl = %[6]s
s2s_ports = { }
modules_enabled = { "roster"; "saslauth"; "tls"; "disco"; "ping"; "smacks"; "mam"; "offline" }
modules_disabled = { "s2s"; "carbons" }
allow_registration = false
authentication = "internal_plain"
storage = "internal"
c2s_require_encryption = false
archive_expires_after = "never"
default_archive_policy = true
max_archive_query_results = 50

VirtualHost %[7]s
	ssl = %[6]s

Component %[8]s "muc"
	modules_enabled = { "muc_mam" }
	ssl = %[6]s
	restrict_room_creation = false
	muc_room_locking = false
	muc_room_default_public_jids = true
	muc_room_default_persistent = true
	muc_room_default_history_length = 20
	muc_log_all_rooms = true
	muc_log_by_default = true
`, q(filepath.Join(d, "prosody.pid")), q(filepath.Join(d, "data")), q(p.LogFile),
		c2s, tls, ssl, q(p.Domain), q(p.MUCDomain))
}

// start runs the server and waits until both ports accept.
func (p *Prosody) start() error {
	logf, err := os.OpenFile(filepath.Join(p.Dir, "prosody.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(ProsodyBin, "-F", "--config", p.Config)
	cmd.Dir = p.Dir
	cmd.Env = append(os.Environ(), "PROSODY_CONFIG="+p.Config, "HOME="+p.Dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, and killed with the test binary should that
	// die without running t.Cleanup.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", ProsodyBin, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(exited) }()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()

	deadline := time.Now().Add(20 * time.Second)
	for _, addr := range []string{p.Addr, p.TLSAddr} {
		for {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-exited:
				return fmt.Errorf("prosody exited before listening on %s", addr)
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("prosody is not listening on %s after 20s", addr)
			}
		}
	}
	return nil
}

// stop ends the server (SIGTERM, then SIGKILL after 10s).
func (p *Prosody) stop() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
}

// Restart stops the server and starts it again on the same ports with
// the same data: every client connection is dropped.
func (p *Prosody) Restart() {
	p.t.Helper()
	p.stop()
	if err := p.start(); err != nil {
		p.t.Fatalf("prosody harness: restart: %v\n%s", err, p.logTail())
	}
}

// Stop stops the server until Start; a test of "the server is down".
func (p *Prosody) Stop() { p.stop() }

// Start starts a stopped server again.
func (p *Prosody) Start() {
	p.t.Helper()
	if err := p.start(); err != nil {
		p.t.Fatalf("prosody harness: start: %v\n%s", err, p.logTail())
	}
}

// AddUser creates the account name@Domain and returns its JID.
func (p *Prosody) AddUser(name, pass string) string {
	p.t.Helper()
	p.prosodyctl("register", name, p.Domain, pass)
	return name + "@" + p.Domain
}

// RoomJID is the address of the room name on MUCDomain. Rooms are made
// by the first occupant joining them (no locking, default config).
func (p *Prosody) RoomJID(name string) string { return name + "@" + p.MUCDomain }

func (p *Prosody) prosodyctl(args ...string) {
	p.t.Helper()
	all := append([]string{"--config", p.Config}, args...)
	cmd := exec.Command(filepath.Join(filepath.Dir(ProsodyBin), "prosodyctl"), all...)
	cmd.Dir = p.Dir
	cmd.Env = append(os.Environ(), "PROSODY_CONFIG="+p.Config, "HOME="+p.Dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("prosodyctl %v: %v", args, err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			p.t.Fatalf("prosodyctl %v: %v\n%s", args[:1], err, out.String())
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		p.t.Fatalf("prosodyctl %v: no answer in 20s\n%s", args[:1], out.String())
	}
}

// logTail is the end of the server's log, for failure messages.
func (p *Prosody) logTail() string {
	var b bytes.Buffer
	for _, f := range []string{filepath.Join(p.Dir, "prosody.out"), p.LogFile} {
		data, _ := os.ReadFile(f)
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(f), data)
	}
	return b.String()
}

// LogTail is the end of the server's log, for a failing test to print.
func (p *Prosody) LogTail() string { return p.logTail() }

// prosodyFreePorts asks the kernel for n free loopback ports.
func prosodyFreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// prosodyWriteCert makes a self-signed certificate for localhost (and its
// subdomains and 127.0.0.1), valid for a day, that is its own CA.
func prosodyWriteCert(dir, certFile, keyFile string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "localhost", Organization: []string{"roster chattest"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost", "rooms.localhost", "*.localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	return os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
}
