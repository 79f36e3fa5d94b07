package chattest

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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// NgircdBinary is where the Debian package installs the daemon.
const NgircdBinary = "/usr/sbin/ngircd"

// Ngircd is a real ngIRCd (Debian's ngircd package, 26.x) running for one
// test on 127.0.0.1: a plaintext port (Addr) and a TLS port (TLSAddr) with
// a self-signed certificate for "localhost" and 127.0.0.1 (CAFile trusts
// it). Stopped on t.Cleanup.
//
// What ngIRCd cannot do, so tests cannot use it for: SASL, accounts, the
// account-tag / account-notify / extended-join / message-tags /
// server-time capabilities (its CAP LS offers only multi-prefix), and
// msgid tags. Anything about verified IRC identities must be tested
// against a fake server.
//
// The configuration turns ngIRCd's flood penalties off (MaxPenaltyTime = 0:
// by default it delays a client after 3 commands or 256 bytes a second),
// so that tests can push many lines fast; the adapter's own rate limit is
// what tests measure. Nicks may be 30 bytes long (MaxNickLength).
type Ngircd struct {
	Addr    string // "127.0.0.1:PORT", plaintext
	TLSAddr string // "127.0.0.1:PORT", TLS from the first byte
	CAFile  string // PEM of the self-signed certificate TLSAddr presents
	Name    string // the server's name ("irc.test.local")
	Dir     string // the temp dir with ngircd.conf, the cert and the log

	t       testing.TB
	conf    string
	logPath string
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
}

// StartNgircd starts ngIRCd for t, or skips t when it is not installed.
func StartNgircd(t testing.TB) *Ngircd {
	t.Helper()
	if _, err := os.Stat(NgircdBinary); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI installs it (.ci/run): %s missing", NgircdBinary)
		}
		t.Skipf("ngircd not installed (%s missing: apt-get install ngircd)", NgircdBinary)
	}
	dir := t.TempDir()
	n := &Ngircd{t: t, Dir: dir, Name: "irc.test.local",
		conf: filepath.Join(dir, "ngircd.conf"), logPath: filepath.Join(dir, "ngircd.log")}
	n.CAFile = filepath.Join(dir, "cert.pem")
	keyFile := filepath.Join(dir, "key.pem")
	if err := ngircdWriteCert(n.CAFile, keyFile); err != nil {
		t.Fatalf("ngircd: certificate: %v", err)
	}
	dhFile := filepath.Join(dir, "dhparams.pem")
	if err := os.WriteFile(dhFile, []byte(ngircdFFDHE2048), 0o644); err != nil {
		t.Fatal(err)
	}
	runDir, err := ngircdRunDir(t, dir)
	if err != nil {
		t.Fatalf("ngircd: %v", err)
	}
	t.Cleanup(func() {
		n.Stop()
		if t.Failed() {
			t.Logf("ngircd log (tail):\n%s", n.LogTail())
		}
	})
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // a free port may be taken meanwhile
		ports, err := ngircdFreePorts(2)
		if err != nil {
			t.Fatalf("ngircd: %v", err)
		}
		n.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
		n.TLSAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
		text := n.configText(ports[0], ports[1], keyFile, dhFile, runDir)
		if err := os.WriteFile(n.conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if lastErr = n.start(10 * time.Second); lastErr == nil {
			return n
		}
		n.Stop()
	}
	t.Fatalf("ngircd did not start: %v\n%s", lastErr, n.LogTail())
	return nil
}

// configText is the ngircd.conf (see ngircd.conf(5)): loopback only, no
// PAM, ident or DNS lookups, no chroot, flood penalties off, an MOTD
// phrase so registration ends with 376, and no include directory (the
// system's /etc/ngircd/ngircd.conf.d would otherwise be read).
func (n *Ngircd) configText(port, tlsPort int, keyFile, dhFile, runDir string) string {
	return fmt.Sprintf(`[Global]
	Name = %s
	Info = roster test server
	AdminInfo1 = roster tests
	AdminInfo2 = 127.0.0.1
	AdminEMail = nobody@localhost
	Listen = 127.0.0.1
	Ports = %d
	MotdPhrase = roster test server
	PidFile = %s
[Limits]
	MaxConnections = 0
	MaxConnectionsIP = 0
	MaxJoins = 0
	MaxNickLength = 30
	MaxPenaltyTime = 0
	PingTimeout = 120
	PongTimeout = 20
	ConnectRetry = 60
[Options]
	PAM = no
	Ident = no
	DNS = no
	IncludeDir = %s
	RequireAuthPing = no
	ScrubCTCP = no
	ConnectIPv6 = no
[SSL]
	CertFile = %s
	KeyFile = %s
	DHFile = %s
	Ports = %d
`, n.Name, port, filepath.Join(runDir, "ngircd.pid"), filepath.Join(n.Dir, "conf.d"),
		n.CAFile, keyFile, dhFile, tlsPort)
}

// ngircdRunDir is a directory the daemon can write its pid file to. Run as
// root, ngIRCd refuses to stay root and switches to "nobody" before it
// writes the pid file, so then the directory is a world-writable one of
// its own (t.TempDir is 0700).
func ngircdRunDir(t testing.TB, dir string) (string, error) {
	if err := os.MkdirAll(filepath.Join(dir, "conf.d"), 0o755); err != nil {
		return "", err
	}
	if os.Geteuid() != 0 {
		return dir, nil
	}
	run, err := os.MkdirTemp("", "ngircd-run-")
	if err != nil {
		return "", err
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	if err := os.Chmod(run, 0o777); err != nil {
		return "", err
	}
	return run, nil
}

// start runs the daemon and waits until both ports accept connections.
func (n *Ngircd) start(wait time.Duration) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return nil
	}
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(NgircdBinary, "--nodaemon", "--passive", "--config", n.conf)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(exited) }()
	n.cmd, n.exited = cmd, exited
	deadline := time.Now().Add(wait)
	for _, addr := range []string{n.Addr, n.TLSAddr} {
		for {
			c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-exited:
				return fmt.Errorf("ngircd exited (%v)", cmd.ProcessState)
			case <-time.After(20 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("ngircd not listening on %s after %s", addr, wait)
			}
		}
	}
	return nil
}

// Stop ends the daemon (SIGTERM, then SIGKILL after 5 s). Idempotent.
func (n *Ngircd) Stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return
	}
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(5 * time.Second):
		n.cmd.Process.Kill()
		<-n.exited
	}
	n.cmd, n.exited = nil, nil
}

// Start starts the daemon again after Stop, on the same ports. It waits
// up to 10 s for the ports to be free and listened on.
func (n *Ngircd) Start() {
	n.t.Helper()
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if err = n.start(5 * time.Second); err == nil {
			return
		}
		n.Stop()
		time.Sleep(100 * time.Millisecond)
	}
	n.t.Fatalf("ngircd did not start again: %v\n%s", err, n.LogTail())
}

// Restart stops the daemon and starts it again on the same ports: every
// client is disconnected, and channels and nicks are forgotten.
func (n *Ngircd) Restart() {
	n.t.Helper()
	n.Stop()
	n.Start()
}

// LogTail is the last 40 lines of the daemon's output.
func (n *Ngircd) LogTail() string {
	b, _ := os.ReadFile(n.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

func ngircdFreePorts(k int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []int
	for i := 0; i < k; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// ngircdWriteCert writes a self-signed ECDSA certificate for localhost and
// 127.0.0.1 (its own CA, so certFile is also the file to trust) and its
// key (SEC 1 PEM, which GnuTLS reads).
func ngircdWriteCert(certFile, keyFile string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "localhost", Organization: []string{"roster test"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	var cb, kb bytes.Buffer
	pem.Encode(&cb, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	pem.Encode(&kb, &pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	if err := os.WriteFile(certFile, cb.Bytes(), 0o644); err != nil {
		return err
	}
	// readable by the daemon only; it reads it before dropping root
	return os.WriteFile(keyFile, kb.Bytes(), 0o600)
}

// ngircdFFDHE2048 is the RFC 7919 ffdhe2048 group (public, standard). Given
// as DHFile it spares ngIRCd (built with GnuTLS) generating DH parameters
// at each start.
const ngircdFFDHE2048 = `-----BEGIN DH PARAMETERS-----
MIIBCAKCAQEA//////////+t+FRYortKmq/cViAnPTzx2LnFg84tNpWp4TZBFGQz
+8yTnc4kmz75fS/jY2MMddj2gbICrsRhetPfHtXV/WVhJDP1H18GbtCFY2VVPe0a
87VXE15/V8k1mE8McODmi3fipona8+/och3xWKE2rec1MKzKT0g6eXq8CrGCsyT7
YdEIqUuyyOP7uWrat2DX9GgdT0Kj3jlN9K5W7edjcrsZCwenyO4KbXCeAvzhzffi
7MA0BM0oNC9hkXL+nOmFg/+OTxIy7vKBg8P+OxtMb61zO7X8vC7CIAXFjvGDfRaD
ssbzSibBsu/6iGtCOGEoXJf//////////wIBAg==
-----END DH PARAMETERS-----
`
