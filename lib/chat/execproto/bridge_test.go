package execproto

// The test bridge: this test binary run again as `TESTBIN __bridge__ DIR`
// (TestMain). A real process speaking the protocol, steered by files in
// DIR that the test writes:
//
//	emit.N       raw bytes printed on stdout at the Nth start (1, 2, ...)
//	exit.N       exit 7 at the Nth start, right after emit.N
//	hello        printed as a hello line's nick first
//	stderr       printed on stderr at each start
//	ignore-term  SIGTERM is ignored
//	linger       stdin's end does not end the bridge (it sleeps)
//	noread       stdin is never read (it sleeps)
//	child        a grandchild (`__sleep__`) is started; its pid in child.pid
//
// It writes starts (the count), pid.N, and appends every stdin line to
// stdin.log as it reads it. A send's text steers the answer: "crash"
// exits 3, "refuse" answers error, "silent" answers nothing, "noid"
// answers sent without id, "emit:LINE" prints LINE before answering;
// any other is sent with id "net-REF".

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if len(os.Args) >= 3 && os.Args[1] == "__bridge__" {
		testBridge(os.Args[2])
		os.Exit(0)
	}
	if len(os.Args) >= 2 && os.Args[1] == "__sleep__" {
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func testBridge(dir string) {
	n := 1
	if b, err := os.ReadFile(filepath.Join(dir, "starts")); err == nil {
		n, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		n++
	}
	must(os.WriteFile(filepath.Join(dir, "starts"), []byte(strconv.Itoa(n)), 0o644))
	must(os.WriteFile(filepath.Join(dir, fmt.Sprintf("pid.%d", n)), []byte(strconv.Itoa(os.Getpid())), 0o644))
	if exists(filepath.Join(dir, "ignore-term")) {
		signal.Ignore(syscall.SIGTERM)
	}
	if exists(filepath.Join(dir, "child")) {
		c := exec.Command(os.Args[0], "__sleep__")
		must(c.Start())
		must(os.WriteFile(filepath.Join(dir, "child.pid"), []byte(strconv.Itoa(c.Process.Pid)), 0o644))
	}
	out := bufio.NewWriter(os.Stdout)
	say := func(b []byte) { out.Write(b); out.Flush() }
	if b, err := os.ReadFile(filepath.Join(dir, "hello")); err == nil {
		say(encodeLine(map[string]string{"type": "hello", "nick": string(b)}))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "stderr")); err == nil {
		os.Stderr.Write(b)
	}
	if b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("emit.%d", n))); err == nil {
		say(b)
	}
	if exists(filepath.Join(dir, fmt.Sprintf("exit.%d", n))) {
		os.Exit(7)
	}
	if exists(filepath.Join(dir, "noread")) {
		time.Sleep(time.Minute)
	}
	logf, err := os.OpenFile(filepath.Join(dir, "stdin.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	must(err)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		logf.Write(append(sc.Bytes(), '\n'))
		var l sendLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Type != "send" {
			continue
		}
		switch {
		case l.Text == "crash":
			os.Exit(3)
		case l.Text == "refuse":
			say(encodeLine(map[string]string{"type": "error", "ref": l.Ref, "error": "no such chat"}))
		case l.Text == "silent":
		case l.Text == "noid":
			say(encodeLine(map[string]string{"type": "sent", "ref": l.Ref}))
		default:
			if raw, ok := strings.CutPrefix(l.Text, "emit:"); ok {
				say([]byte(raw + "\n"))
			}
			say(encodeLine(map[string]string{"type": "sent", "ref": l.Ref, "id": "net-" + l.Ref}))
		}
	}
	if exists(filepath.Join(dir, "linger")) {
		time.Sleep(time.Minute)
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "test bridge:", err)
		os.Exit(99)
	}
}
