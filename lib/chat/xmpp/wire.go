package xmpp

import (
	"context"
	"io"
	"net"
	"time"

	"mellium.im/xmpp"
	"mellium.im/xmpp/jid"
)

// writeTimeout bounds each write to the server.
var writeTimeout = 20 * time.Second

// deadlineConn gives every write its own deadline.
//
// This package never hands mellium a context that can be cancelled:
// mellium turns a context into a connection deadline with a goroutine
// that, when the context is cancelled just after the call returned, may
// still set a deadline in the past (and then clear it), failing whatever
// write or read happens in between: a spurious "i/o timeout" that ends a
// healthy session (seen under load in this package's tests). Time limits
// are set here instead, on the connection itself.
type deadlineConn struct{ net.Conn }

func (d deadlineConn) Write(b []byte) (int, error) {
	d.Conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	return d.Conn.Write(b)
}

// negotiate runs mellium's session negotiation over rw (raw, or TLS over
// it), bounded by ctx through raw's deadline and closing raw if ctx ends.
func negotiate(ctx context.Context, raw net.Conn, rw io.ReadWriter, origin jid.JID, state xmpp.SessionState, features []xmpp.StreamFeature) (*xmpp.Session, error) {
	if dl, ok := ctx.Deadline(); ok {
		raw.SetReadDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	s, err := xmpp.NewSession(context.Background(), origin.Domain(), origin, rw, state, xmpp.NewNegotiator(
		func(*xmpp.Session, *xmpp.StreamConfig) xmpp.StreamConfig {
			return xmpp.StreamConfig{Features: features}
		}))
	if !stop() && err == nil {
		err = ctx.Err() // ctx ended as it finished: raw is closed
	}
	raw.SetReadDeadline(time.Time{})
	return s, err
}
