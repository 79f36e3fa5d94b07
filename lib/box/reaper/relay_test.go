package reaper

import (
	"bufio"
	"io"
	"net"
	"path/filepath"
	"testing"
)

// TestRelayCopiesBothWaysAndPassesHalfClose: a client's bytes reach the
// socket unchanged, the answer comes back, and the client's end of writing
// reaches the far side (an HTTP/1.0-style client relies on it).
func TestRelayCopiesBothWaysAndPassesHalfClose(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "gw.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	go func() {
		for {
			c, err := ul.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				got, _ := io.ReadAll(c) // until the client's half-close
				c.Write(append([]byte("echo:"), got...))
			}()
		}
	}()
	l, err := Relay("127.0.0.1:0", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("CONNECT x:443 HTTP/1.1\r\n\r\n"))
		c.(*net.TCPConn).CloseWrite()
		out, err := io.ReadAll(bufio.NewReader(c))
		c.Close()
		if err != nil || string(out) != "echo:CONNECT x:443 HTTP/1.1\r\n\r\n" {
			t.Fatalf("relayed %q, %v", out, err)
		}
	}
}

// TestRelayWithoutGatewayClosesTheClient: no socket (the gateway is gone)
// is a closed connection, never a hang.
func TestRelayWithoutGatewayClosesTheClient(t *testing.T) {
	l, err := Relay("127.0.0.1:0", filepath.Join(t.TempDir(), "none.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatalf("read %d bytes from a relay with no gateway", n)
	}
}
