package reaper

import (
	"io"
	"net"
	"sync"
)

// maxRelayed bounds the connections relayed at once; more wait in the
// listen backlog. The box's own cgroup bounds the rest.
const maxRelayed = 1024

// Relay listens on addr (TCP, in the box's own network namespace) and
// copies the bytes of each connection to and from a new connection to the
// Unix socket sock, where the run's gateway decides everything: the relay
// reads nothing and decides nothing. It serves until the listener is
// closed.
func Relay(addr, sock string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	slots := make(chan struct{}, maxRelayed)
	go func() {
		for {
			slots <- struct{}{}
			c, err := l.Accept()
			if err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					<-slots
					continue
				}
				return
			}
			go func() {
				defer func() { <-slots }()
				relay(c, sock)
			}()
		}
	}()
	return l, nil
}

// relay copies c to a new connection to sock and back, passing on each
// side's end of writing, until both directions are done.
func relay(c net.Conn, sock string) {
	defer c.Close()
	u, err := net.Dial("unix", sock)
	if err != nil {
		return
	}
	defer u.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(u, c)
		_ = u.(*net.UnixConn).CloseWrite()
	}()
	_, _ = io.Copy(c, u)
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	wg.Wait()
}
