package xmpp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"strings"
	"time"

	"mellium.im/sasl"
	"mellium.im/xmpp"
	"mellium.im/xmpp/stream"
)

// dialTimeout bounds the connection and the whole negotiation.
var dialTimeout = 30 * time.Second

// The TLS modes of Config.TLS.
const (
	tlsRequire  = "require"  // TLS from the first byte (XEP-0368's direct TLS)
	tlsStartTLS = "starttls" // plaintext, then STARTTLS, required
	tlsOff      = "off"      // plaintext, for a loopback server only
)

// serverAddr is the host:port to dial: Config.Server, else the JID's
// domain (no DNS SRV lookup, ever) at 5222, or 5223 for direct TLS.
func serverAddr(server, domain, mode string) (string, error) {
	if server != "" {
		host, port, err := net.SplitHostPort(server)
		if err != nil || host == "" || port == "" {
			return "", fmt.Errorf("server %q is not host:port", server)
		}
		return server, nil
	}
	port := "5222"
	if mode == tlsRequire {
		port = "5223"
	}
	return net.JoinHostPort(domain, port), nil
}

// loopbackOnly checks that a plaintext connection stays on this machine:
// an IP literal that is loopback, or "localhost" (taken as 127.0.0.1,
// never looked up). It returns the address to dial.
func loopbackOnly(addr string) (string, error) {
	host, port, _ := net.SplitHostPort(addr)
	if strings.EqualFold(host, "localhost") {
		return net.JoinHostPort("127.0.0.1", port), nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return addr, nil
	}
	return "", fmt.Errorf("tls = \"off\" sends the password in the clear, so it is only for a loopback server (127.0.0.1, ::1 or localhost), and %s is not one: use tls = \"require\" or \"starttls\"", addr)
}

func tlsConfig(domain, caFile string) (*tls.Config, error) {
	cfg := &tls.Config{ServerName: domain, MinVersion: tls.VersionTLS12}
	if caFile == "" {
		return cfg, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("ca_file %s holds no PEM certificate", caFile)
	}
	cfg.RootCAs = pool
	return cfg, nil
}

// dial connects and negotiates a session (TLS as configured, SASL,
// resource binding) within dialTimeout.
func (a *Adapter) dial(ctx context.Context) (*xmpp.Session, net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	var d net.Dialer
	tcp, err := d.DialContext(ctx, "tcp", a.addr)
	if err != nil {
		return nil, nil, err
	}
	raw := deadlineConn{tcp}
	var rw net.Conn = raw
	var state xmpp.SessionState
	features := []xmpp.StreamFeature{a.saslFeature(), xmpp.BindResource()}
	switch a.mode {
	case tlsRequire:
		cfg := a.tls.Clone()
		cfg.NextProtos = []string{"xmpp-client"}
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, nil, fmt.Errorf("tls: %w", err)
		}
		rw = tc
	case tlsStartTLS:
		features = append([]xmpp.StreamFeature{xmpp.StartTLS(a.tls.Clone())}, features...)
	case tlsOff:
		// Loopback only (checked in New): mellium's SASL wants a secure
		// stream, and this one is as secure as the machine.
		state = xmpp.Secure
	}
	s, err := negotiate(ctx, raw, rw, a.me, state, features)
	if err != nil {
		raw.Close()
		var se stream.Error
		if errors.As(err, &se) && se.Err == stream.HostUnknown.Err {
			return nil, nil, &fatalError{fmt.Errorf("the server does not serve the domain %s: %w", a.me.Domain(), err)}
		}
		return nil, nil, err
	}
	if a.mode == tlsStartTLS && s.ConnectionState().Version == 0 {
		raw.Close()
		return nil, nil, errors.New("the session is not encrypted although starttls is required")
	}
	return s, raw, nil
}

// saslFeature is mellium's SASL with the strongest mechanisms first, and
// a refused login made fatal (retrying a wrong password helps nobody).
func (a *Adapter) saslFeature() xmpp.StreamFeature {
	f := xmpp.SASL("", a.cfg.Password, sasl.ScramSha256, sasl.ScramSha1, sasl.Plain)
	negotiate := f.Negotiate
	f.Negotiate = func(ctx context.Context, s *xmpp.Session, data interface{}) (xmpp.SessionState, io.ReadWriter, error) {
		if offered, ok := data.([]string); ok && !anyOf(offered, "SCRAM-SHA-256", "SCRAM-SHA-1", "PLAIN") {
			return 0, nil, &fatalError{fmt.Errorf("the server offers no SASL mechanism roster knows (it offers %s)", strings.Join(offered, ", "))}
		}
		mask, rw, err := negotiate(ctx, s, data)
		if cond, ok := saslCondition(err); ok && cond != "temporary-auth-failure" && cond != "aborted" {
			err = &fatalError{fmt.Errorf("%w (%s): check the credential of [chat.%s] in org.toml", ErrLoginRefused, cond, a.cfg.Account)}
		}
		return mask, rw, err
	}
	return f
}

func anyOf(list []string, want ...string) bool {
	for _, l := range list {
		for _, w := range want {
			if l == w {
				return true
			}
		}
	}
	return false
}

// saslCondition is the condition of a SASL <failure/> from the server.
// mellium keeps its failure type internal (internal/saslerr.Error, with
// a Condition field that is a fmt.Stringer), so it is recognised by its
// package path; anything else is not a failure answer (a network error,
// a timeout).
func saslCondition(err error) (string, bool) {
	for e := err; e != nil; e = errors.Unwrap(e) {
		v := reflect.ValueOf(e)
		if v.Kind() != reflect.Struct || !strings.HasSuffix(v.Type().PkgPath(), "internal/saslerr") {
			continue
		}
		f := v.FieldByName("Condition")
		if !f.IsValid() || !f.CanInterface() {
			return "not-authorized", true
		}
		if s, ok := f.Interface().(fmt.Stringer); ok {
			return s.String(), true
		}
		return "not-authorized", true
	}
	return "", false
}
