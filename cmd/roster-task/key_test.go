package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/cli"
)

// openPty returns a pseudo-terminal's master and slave.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	m := os.NewFile(uintptr(fd), "/dev/ptmx") // non-blocking: reads go through the poller
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

func TestKeyPutReadsATerminalWithoutEcho(t *testing.T) {
	master, slave := openPty(t)
	var stderr bytes.Buffer
	env := &cli.Env{Name: "roster-task", Stdin: slave, Stdout: io.Discard, Stderr: &stderr, Ctx: context.Background()}
	type result struct {
		key []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := readKey(env, "anthropic")
		if err != nil {
			done <- result{nil, err}
			return
		}
		key, _ := io.ReadAll(r)
		done <- result{key, nil}
	}()
	// Type the key once the terminal's echo is off (as a person would,
	// after the prompt).
	for {
		st, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		if st.Lflag&unix.ECHO == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := master.Write([]byte("sk-ant-secret-1\n")); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	if string(res.key) != "sk-ant-secret-1" {
		t.Fatalf("key %q", res.key)
	}
	if !bytes.Contains(stderr.Bytes(), []byte("key for anthropic (not echoed)")) {
		t.Fatalf("no prompt: %q", stderr.String())
	}
	// Echo is back on: a marker typed now comes back, after whatever the
	// terminal echoed before it, which holds nothing of the key.
	if _, err := master.Write([]byte("END-MARK\n")); err != nil {
		t.Fatal(err)
	}
	var echo []byte
	buf := make([]byte, 256)
	for !bytes.Contains(echo, []byte("END-MARK")) {
		n, err := master.Read(buf)
		if err != nil {
			t.Fatalf("reading the echo: %v (so far %q)", err, echo)
		}
		echo = append(echo, buf[:n]...)
	}
	if bytes.Contains(echo, []byte("secret")) {
		t.Fatalf("the key was echoed: %q", echo)
	}
	// and echo is back on afterwards
	st, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if st.Lflag&unix.ECHO == 0 {
		t.Fatal("echo left off")
	}
}

func TestKeyPutReadsAPipeAsItIs(t *testing.T) {
	env := &cli.Env{Name: "roster-task", Stdin: bytes.NewReader([]byte("k\n")), Stderr: io.Discard}
	r, err := readKey(env, "openai")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(r); string(b) != "k\n" {
		t.Fatalf("%q", b)
	}
}
