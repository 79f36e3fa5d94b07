package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

const realKey = "sk-ant-api03-REAL-test-key-never-in-a-box-0123456789"

// upstream is a fake Anthropic API on 127.0.0.1: it answers a message
// with usage when it is given the real key, 401 otherwise, and remembers
// the keys it saw.
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	keys []string
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		u.mu.Lock()
		u.keys = append(u.keys, r.Header.Get("x-api-key"))
		u.mu.Unlock()
		w.Header().Set("content-type", "application/json")
		w.Header().Set("request-id", "req_test_1")
		if r.Header.Get("x-api-key") != realKey {
			w.WriteHeader(401)
			io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
			return
		}
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"hello from the model"}],"stop_reason":"end_turn","usage":{"input_tokens":11,"output_tokens":7}}`)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) seen() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string{}, u.keys...)
}

// gatewayFixture is a worker whose box has the default network, the
// gateway, with the fake upstream as its anthropic provider and the real
// key in the vault.
func gatewayFixture(t *testing.T, specExtra string) (*fixture, *upstream) {
	u := newUpstream(t)
	f := newFixture(t, job, specExtra)
	org := fmt.Sprintf("[gateway.anthropic]\nupstream = %q\n", u.URL)
	if err := os.WriteFile(f.h.OrgFile(), []byte(org), 0o644); err != nil {
		t.Fatal(err)
	}
	putVaultKey(t, f, "anthropic", realKey)
	return f, u
}

// putVaultKey puts key into the home's vault for provider, as `roster key
// put` leaves it (folder 0700, file 0600).
func putVaultKey(t *testing.T, f *fixture, provider, key string) {
	t.Helper()
	if err := os.MkdirAll(f.h.Vault(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.h.Vault(), provider), []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestGatewayBoxReachesTheModelWithoutTheKey: a box with the default
// network reaches its provider through 127.0.0.1:3128, the upstream sees
// the real key, and the key is nowhere in the box (environment, any
// process's environ, files it can read) nor in the run folder; the
// ledger and run.json record the call and its tokens.
func TestGatewayBoxReachesTheModelWithoutTheKey(t *testing.T) {
	f, u := gatewayFixture(t, "[gateway]\nproviders = [\"anthropic\"]")
	f.setJob(`set -e
curl -sS -o ~/store/answer.json "$ANTHROPIC_BASE_URL/v1/messages" -H "x-api-key: $ANTHROPIC_API_KEY" -H 'content-type: application/json' -d '{"model":"claude-test","max_tokens":5,"messages":[]}'
env > ~/store/env.txt
cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' > ~/store/environ.txt || true
ls -l /run/roster > ~/store/run-roster.txt
if grep -rqs 'REAL-tes[t]-key' /home /etc /tmp /run /opt 2>/dev/null; then echo FOUND > ~/store/leak.txt; fi
roster-task complete asked`)
	rec, _ := f.dispatch(tms.NewTask{Text: "ask the model"})
	if rec.Attested != tms.AttestedCompleted {
		t.Fatalf("attested %q\n%s", rec.Attested, f.transcript(rec.ID))
	}
	answer, _ := os.ReadFile(filepath.Join(f.w.Store(), "answer.json"))
	if !strings.Contains(string(answer), "hello from the model") {
		lg, _ := os.ReadFile(runs.GatewayLedger(f.w.Run(rec.ID)))
		t.Fatalf("the box's answer: %s\n%s\n%s", answer, f.transcript(rec.ID), lg)
	}
	if keys := u.seen(); len(keys) != 1 || keys[0] != realKey {
		t.Fatalf("upstream saw keys %q, want the real key once", keys)
	}
	env, _ := os.ReadFile(filepath.Join(f.w.Store(), "env.txt"))
	for _, want := range []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:3128/anthropic", "HTTPS_PROXY=http://127.0.0.1:3128", "ROSTER_GATEWAY=http://127.0.0.1:3128", "ANTHROPIC_API_KEY=sk-ant-api03-roster-placeholder"} {
		if !strings.Contains(string(env), want) {
			t.Errorf("box environment lacks %q:\n%s", want, env)
		}
	}
	// the key in no box-visible place, and nowhere in the run folder
	for _, p := range []string{"env.txt", "environ.txt", "leak.txt"} {
		data, _ := os.ReadFile(filepath.Join(f.w.Store(), p))
		if strings.Contains(string(data), "REAL-test-key") || p == "leak.txt" && len(data) > 0 {
			t.Errorf("the real key is visible in the box (%s)", p)
		}
	}
	filepath.Walk(f.w.Run(rec.ID), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if data, _ := os.ReadFile(p); strings.Contains(string(data), "REAL-test-key") {
				t.Errorf("the real key is in the run folder: %s", p)
			}
		}
		return nil
	})
	if rec.Cost.ModelCalls != 1 || rec.Cost.InputTokens != 11 || rec.Cost.OutputTokens != 7 {
		t.Errorf("cost %+v, want 1 call of 11+7 tokens", rec.Cost)
	}
	all := ledger(t, f, rec.ID)
	if rec.Gateway == nil || rec.Gateway.Requests != len(all) || rec.Gateway.Refused != 0 {
		t.Errorf("gateway summary %+v, ledger of %d", rec.Gateway, len(all))
	}
	// Only the model call: the box's pid 1 makes ~/knowledge from the
	// run's knowledge objects, not through the gateway.
	if len(all) != 1 || all[0].Kind != "model" || all[0].Provider != "anthropic" || all[0].Status != 200 ||
		all[0].Path != "/v1/messages" || all[0].InputTokens != 11 || all[0].RequestID != "req_test_1" {
		t.Errorf("ledger %+v", all)
	}
	// the socket folder is the run's own and gone after it
	if _, err := os.Stat(filepath.Join("/run/roster/gw", rec.ID)); !os.IsNotExist(err) {
		t.Errorf("the run's gateway folder outlived the run: %v", err)
	}
}

// TestGatewayBoxEgressOnlyToGrants: CONNECT and http to a granted local
// server work; an ungranted name, an IP literal, a name in no grant are
// refused with 403 and the kind; the box has no resolver of its own.
func TestGatewayBoxEgressOnlyToGrants(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "granted page") }))
	defer web.Close()
	raw, err := net.Listen("tcp", "127.0.0.1:0") // a TCP service for CONNECT
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	go func() {
		for {
			c, err := raw.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "tunnel ok\n")
			c.Close()
		}
	}()
	webAddr, rawAddr := strings.TrimPrefix(web.URL, "http://"), raw.Addr().String()
	f, _ := gatewayFixture(t, fmt.Sprintf("[gateway]\nallow = [%q, %q]", webAddr, rawAddr))
	f.setJob(`cd ~/store
P=http://127.0.0.1:3128
curl -sS --noproxy '' -x $P http://` + webAddr + `/ > http.txt
curl -sS --noproxy '' -x $P -p telnet://` + rawAddr + ` </dev/null > connect.txt
curl -s --noproxy '' -x $P -o /dev/null -D denied.h -w '%{http_code}' http://not-granted.invalid/ > denied.code
curl -s --noproxy '' -x $P -o /dev/null -D literal.h -w '%{http_code}' http://127.0.0.2:` + strings.Split(webAddr, ":")[1] + `/ > literal.code
curl -s --noproxy '*' -o /dev/null -D route.h -w '%{http_code}' $P/nowhere > route.code
if getent hosts roster-test.invalid; then echo yes; else echo no; fi > resolver.txt
roster-task complete probed`)
	rec, _ := f.dispatch(tms.NewTask{Text: "probe the grants"})
	read := func(n string) string { b, _ := os.ReadFile(filepath.Join(f.w.Store(), n)); return string(b) }
	if read("http.txt") != "granted page" {
		t.Errorf("http to a granted target: %q\n%s", read("http.txt"), f.transcript(rec.ID))
	}
	if !strings.Contains(read("connect.txt"), "tunnel ok") {
		t.Errorf("CONNECT to a granted target: %q\n%s", read("connect.txt"), f.transcript(rec.ID))
	}
	for _, c := range []struct{ name, kind string }{{"denied", runs.RefuseHostDenied}, {"literal", runs.RefuseIPLiteral}, {"route", runs.RefuseBadRequest}} {
		if code := read(c.name + ".code"); code != "403" || !strings.Contains(strings.ToLower(read(c.name+".h")), "x-roster-refusal: "+c.kind) {
			t.Errorf("%s: status %q, headers %q; want 403 %s", c.name, code, read(c.name+".h"), c.kind)
		}
	}
	if strings.TrimSpace(read("resolver.txt")) != "no" {
		t.Errorf("the box resolved a name by itself")
	}
	if rec.Gateway == nil || rec.Gateway.Refused != 3 || rec.Gateway.Refusals[runs.RefuseHostDenied] != 1 {
		t.Errorf("gateway summary %+v", rec.Gateway)
	}
}

// TestRunWithoutReportAfterRefusalsIsFailedWithThem: the worker's calls
// are all refused (no credential anywhere), it gives up without a word:
// attested failed, the reason naming the refusals.
func TestRunWithoutReportAfterRefusalsIsFailedWithThem(t *testing.T) {
	f, _ := gatewayFixture(t, "[gateway]\nproviders = [\"anthropic\"]")
	os.Remove(filepath.Join(f.h.Vault(), "anthropic"))
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("PI_CODING_AGENT_DIR", t.TempDir()) // no pi login either
	f.setJob(`for i in 1 2 3; do curl -s -o /dev/null "$ANTHROPIC_BASE_URL/v1/messages" -d '{}'; done; exit 0`)
	rec, _ := f.dispatch(tms.NewTask{Text: "try and give up"})
	if rec.Attested != tms.AttestedFailed || rec.Evidence == nil || rec.Evidence.Reason != "gateway refused 3 calls (no_credential)" {
		t.Fatalf("attested %q, evidence %+v\n%s", rec.Attested, rec.Evidence, f.transcript(rec.ID))
	}
}

func ledger(t *testing.T, f *fixture, run string) []runs.LedgerEntry {
	t.Helper()
	data, err := os.ReadFile(runs.GatewayLedger(f.w.Run(run)))
	if err != nil {
		t.Fatal(err)
	}
	var out []runs.LedgerEntry
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e runs.LedgerEntry
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("ledger line %q: %v", l, err)
		}
		if !e.Open {
			out = append(out, e)
		}
	}
	return out
}

// TestLedgerAfterSupervisorKilledMidRequest: the supervisor is killed -9
// while its box's model calls stream; the box is reaped, and then every
// ledger line parses and none is torn (the kill can cut the write in
// flight short; the reap drops such a tail).
func TestLedgerAfterSupervisorKilledMidRequest(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("content-type", "text/event-stream")
		fl := w.(http.Flusher)
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n")
		fl.Flush()
		for i := 0; i < 5; i++ {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
			io.WriteString(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n")
			fl.Flush()
		}
		io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":5}}\n\n")
	}))
	defer slow.Close()
	f := newFixture(t, job, "[gateway]\nproviders = [\"anthropic\"]")
	os.WriteFile(f.h.OrgFile(), []byte(fmt.Sprintf("[gateway.anthropic]\nupstream = %q\ncredentials = [\"env:ROSTER_TEST_KEY\"]\n", slow.URL)), 0o644)
	f.setJob(`while :; do curl -s -N -o /dev/null "$ANTHROPIC_BASE_URL/v1/messages" -d '{"stream":true}'; done`)
	for round := 0; round < 3; round++ {
		exe, _ := os.Executable()
		cmd := exec.Command(exe, "run", "dobby", "--home", f.h.Dir, "--", "sh", "/home/worker/store/job.sh")
		cmd.Env = append(os.Environ(), "ROSTER_BOX_AS_MAIN=1", "ROSTER_TEST_KEY=k")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var run string
		waitFor(t, func() bool {
			ents, _ := os.ReadDir(f.w.Runs())
			for _, e := range ents {
				if data, _ := os.ReadFile(runs.GatewayLedger(f.w.Run(e.Name()))); bytes.Count(data, []byte("\n")) > 3+round*2 {
					if _, err := os.Stat(filepath.Join(f.w.Run(e.Name()), "run.json")); err == nil {
						if rec, _ := runs.ReadRecord(f.w.Run(e.Name())); rec != nil && rec.Ended == "" {
							run = e.Name()
							return true
						}
					}
				}
			}
			return false
		})
		time.Sleep(time.Duration(round*37) * time.Millisecond) // a different instant each round
		cmd.Process.Kill()
		cmd.Wait()
		if code, _, errb := f.box("reap", run); code != 0 {
			t.Fatalf("reap: exit %d: %s", code, errb)
		}
		data, err := os.ReadFile(runs.GatewayLedger(f.w.Run(run)))
		if err != nil || len(data) == 0 || data[len(data)-1] != '\n' {
			t.Fatalf("ledger %q %v", data, err)
		}
		for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			var e runs.LedgerEntry
			if err := json.Unmarshal(l, &e); err != nil || e.Seq == 0 {
				t.Fatalf("round %d: ledger line %q does not parse: %v", round, l, err)
			}
		}
	}
}

// TestNoneNetworkBoxHasNoGateway: network = "none" is loopback only: no
// socket, no relay, no proxy variables, and no run folder ledger.
func TestNoneNetworkBoxHasNoGateway(t *testing.T) {
	f := newFixture(t, job, `network = "none"`)
	f.setJob(`cd ~/store
test -e /run/roster/gateway.sock && echo sock > found.txt
env | grep -qi proxy && echo env >> found.txt
curl -s -m 2 http://127.0.0.1:3128/ >/dev/null && echo relay >> found.txt
roster-task complete looked`)
	rec, _ := f.dispatch(tms.NewTask{Text: "look for a gateway"})
	if rec.Attested != tms.AttestedCompleted {
		t.Fatalf("attested %q\n%s", rec.Attested, f.transcript(rec.ID))
	}
	if found, _ := os.ReadFile(filepath.Join(f.w.Store(), "found.txt")); len(found) > 0 {
		t.Fatalf("a network = \"none\" box has a gateway: %s", found)
	}
	if _, err := os.Stat(runs.GatewayLedger(f.w.Run(rec.ID))); !os.IsNotExist(err) || rec.Gateway != nil {
		t.Fatalf("ledger %v, summary %+v for a box with no gateway", err, rec.Gateway)
	}
}

// countingUpstream answers every call with 100 input and 50 output tokens
// when given key(), 401 otherwise.
func countingUpstream(t *testing.T, key func() string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("content-type", "application/json")
		if r.Header.Get("x-api-key") != key() {
			w.WriteHeader(401)
			io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
			return
		}
		io.WriteString(w, `{"type":"message","model":"claude-test","content":[],"usage":{"input_tokens":100,"output_tokens":50}}`)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestProactiveBudgetInTokensIsEnforcedByTheGateway: with proactive_tokens
// = 300, a proactive run's calls of 150 tokens go 200, 200, then 403
// budget_spent; the next proactive run that day is refused at its first
// call (the day's usage counts); an owner run is never refused for budget.
func TestProactiveBudgetInTokensIsEnforcedByTheGateway(t *testing.T) {
	up := countingUpstream(t, func() string { return realKey })
	f, _ := gatewayFixture(t, "[gateway]\nproviders = [\"anthropic\"]")
	org := fmt.Sprintf("[gateway.anthropic]\nupstream = %q\n[budget]\nproactive_tokens = 300\n", up.URL)
	os.WriteFile(f.h.OrgFile(), []byte(org), 0o644)
	f.setJob(`for i in 1 2 3; do curl -s -o /dev/null -w '%{http_code} ' "$ANTHROPIC_BASE_URL/v1/messages" -d '{}'; done > ~/store/codes-$ROSTER_RUN.txt
roster-task complete tried`)
	codes := func(rec *runs.Record) string {
		b, _ := os.ReadFile(filepath.Join(f.w.Store(), "codes-"+rec.ID+".txt"))
		return strings.TrimSpace(string(b))
	}
	rec, _ := f.dispatch(tms.NewTask{Text: "proactive work", Standing: tms.Proactive, By: "worker"})
	if got := codes(rec); got != "200 200 403" {
		t.Fatalf("proactive run's calls answered %q, want 200 200 403\n%s", got, f.transcript(rec.ID))
	}
	if rec.Cost.InputTokens+rec.Cost.OutputTokens != 300 || rec.Gateway.Refusals[runs.RefuseBudgetSpent] != 1 {
		t.Fatalf("cost %+v, gateway %+v", rec.Cost, rec.Gateway)
	}
	rec2, _ := f.dispatch(tms.NewTask{Text: "more proactive work", Standing: tms.Proactive, By: "worker"})
	if got := codes(rec2); got != "403 403 403" {
		t.Fatalf("the day's second proactive run: %q, want 403 403 403", got)
	}
	rec3, _ := f.dispatch(tms.NewTask{Text: "the owner asks", Standing: tms.Owner})
	if got := codes(rec3); got != "200 200 200" {
		t.Fatalf("an owner run was refused for budget: %q", got)
	}
}

// TestRotatedKeyIsUsedAtOnceAndARemovedOneRefused: the vault's key is
// replaced between two calls of one run, then removed: the upstream sees
// the new key on the second call, and the third is no_credential.
func TestRotatedKeyIsUsedAtOnceAndARemovedOneRefused(t *testing.T) {
	var mu sync.Mutex
	want := realKey
	up := countingUpstream(t, func() string { mu.Lock(); defer mu.Unlock(); return want })
	f, _ := gatewayFixture(t, "[gateway]\nproviders = [\"anthropic\"]")
	os.WriteFile(f.h.OrgFile(), []byte(fmt.Sprintf("[gateway.anthropic]\nupstream = %q\ncredentials = [\"vault\"]\n", up.URL)), 0o644)
	vault := filepath.Join(f.h.Vault(), "anthropic")
	f.setJob(`cd ~/store
call() { curl -s -o /dev/null -D h$1 -w '%{http_code} ' "$ANTHROPIC_BASE_URL/v1/messages" -d '{}' >> codes.txt; }
call 1; touch step1; while [ ! -e step2 ]; do sleep 0.05; done
call 2; touch step3; while [ ! -e step4 ]; do sleep 0.05; done
call 3; roster-task complete rotated`)
	done := make(chan *runs.Record)
	go func() { rec, _ := f.dispatch(tms.NewTask{Text: "rotate"}); done <- rec }()
	step := func(wait, next string, change func()) {
		waitFor(t, func() bool { _, err := os.Stat(filepath.Join(f.w.Store(), wait)); return err == nil })
		change()
		os.WriteFile(filepath.Join(f.w.Store(), next), nil, 0o644)
	}
	step("step1", "step2", func() {
		mu.Lock()
		want = "sk-ant-api03-ROTATED-key"
		mu.Unlock()
		tmp := vault + ".new"
		os.WriteFile(tmp, []byte("sk-ant-api03-ROTATED-key\n"), 0o600)
		os.Rename(tmp, vault)
	})
	step("step3", "step4", func() { os.Remove(vault) })
	rec := <-done
	codes, _ := os.ReadFile(filepath.Join(f.w.Store(), "codes.txt"))
	h3, _ := os.ReadFile(filepath.Join(f.w.Store(), "h3"))
	if strings.TrimSpace(string(codes)) != "200 200 403" || !strings.Contains(strings.ToLower(string(h3)), "x-roster-refusal: no_credential") {
		t.Fatalf("codes %q, third answer %q\n%s", codes, h3, f.transcript(rec.ID))
	}
}
