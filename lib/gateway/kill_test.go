package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/creds"
	"github.com/roster-sh/roster/lib/repos"
	"github.com/roster-sh/roster/lib/runs"
)

// TestMain lets the test binary play a supervisor serving a gateway (for
// the kill -9 test) when asked through the environment.
func TestMain(m *testing.M) {
	if os.Getenv(repos.JudgeFDEnv) != "" && len(os.Args) > 1 && os.Args[len(os.Args)-1] == "pre-receive" {
		os.Exit(repos.HookMain(os.Stdin, os.Stderr)) // roster's pre-receive hook, as roster-box git-hook is
	}
	if dir := os.Getenv("ROSTER_GATEWAY_TEST_SERVE"); dir != "" {
		serveForKill(dir, os.Getenv("ROSTER_GATEWAY_TEST_UPSTREAM"))
		return
	}
	os.Exit(m.Run())
}

func serveForKill(dir, upstream string) {
	ps := creds.BuiltinProviders()
	p := ps["anthropic"]
	p.Upstream = upstream
	ps["anthropic"] = p
	g, err := New(Config{Providers: ps, Granted: []string{"anthropic"},
		Creds:  creds.Creds{VaultDir: filepath.Join(dir, "vault"), PiDir: filepath.Join(dir, "pi"), Env: envMap(nil)},
		Ledger: filepath.Join(dir, "gateway.jsonl")})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "gateway.sock"))
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("ready")
	g.Serve(l)
}

// The ledger after its supervisor is killed -9 mid-request: every line
// that is there parses but a torn last one, which readers see as torn,
// and seqs run 1..N.
func TestLedgerAfterKill9(t *testing.T) {
	up := newFakeUpstream(t, realKey)
	for round := 0; round < 5; round++ {
		dir := t.TempDir()
		if err := creds.PutVault(filepath.Join(dir, "vault"), "anthropic", strings.NewReader(realKey)); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "ROSTER_GATEWAY_TEST_SERVE="+dir, "ROSTER_GATEWAY_TEST_UPSTREAM="+up.srv.URL)
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
			cmd.Process.Kill()
			t.Fatalf("helper: %q", line)
		}
		client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", filepath.Join(dir, "gateway.sock"))
		}}}
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					body := `{"stream":true}`
					if rand.IntN(2) == 0 {
						body = `{}`
					}
					resp, err := client.Post("http://gateway/anthropic/v1/messages", "application/json", strings.NewReader(body))
					if err != nil {
						return // the supervisor is gone
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
		}
		time.Sleep(time.Duration(20+rand.IntN(200)) * time.Millisecond) // a random instant, not a bound
		cmd.Process.Kill()
		cmd.Wait()
		close(stop)
		wg.Wait()
		client.CloseIdleConnections()

		data, err := os.ReadFile(filepath.Join(dir, "gateway.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		// A kill -9 can cut the one write in flight short at a page
		// boundary (the kernel stops a write when a fatal signal is
		// pending), so the last line may be torn: readers must report
		// it as torn and never decode it; every line before it is whole.
		torn := 0
		err = runs.ScanLedger(dir, func(l runs.LedgerLine) error {
			if l.Torn {
				torn++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 0 && data[len(data)-1] != '\n' {
			if torn != 1 {
				t.Fatalf("round %d: a torn last line not reported as torn by ScanLedger", round)
			}
			// and the reap of the killed supervisor's run drops it
			if err := runs.DropTornLedgerTail(dir); err != nil {
				t.Fatal(err)
			}
			if data, _ = os.ReadFile(filepath.Join(dir, "gateway.jsonl")); len(data) > 0 && data[len(data)-1] != '\n' {
				t.Fatalf("round %d: still torn after DropTornLedgerTail", round)
			}
		} else if torn != 0 {
			t.Fatalf("round %d: ScanLedger reports a torn line in a ledger ending with a newline", round)
		}
		n := 0
		for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			var e runs.LedgerEntry
			if err := json.Unmarshal(line, &e); err != nil {
				t.Fatalf("round %d: line %q: %v", round, line, err)
			}
			n++
			if e.Seq != int64(n) {
				t.Fatalf("round %d: seq %d at line %d", round, e.Seq, n)
			}
			if bytes.Contains(line, []byte(realKey)) {
				t.Fatal("a key in the ledger")
			}
		}
		t.Logf("round %d: %d lines intact after kill -9", round, n)
	}
}
