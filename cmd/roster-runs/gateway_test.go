package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
)

// A live run's ledger ends in the line its gateway is appending: left out
// silently. Once the run is over, a torn last line is a write cut short
// and is named in a warning.
func TestGatewayTornLastLineWarnsOnlyOnceTheRunIsOver(t *testing.T) {
	h := home.Home{Dir: t.TempDir()}
	id := "2026-11-30-10-00-00-aaaa"
	dir := h.Worker("dobby").Run(id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ledger := `{"seq":1,"kind":"connect","method":"CONNECT","host":"github.com","port":443,"decision":"allowed","status":200,"bytes_up":1,"bytes_down":1,"ms":1}` + "\n" + `{"seq":2,"ki`
	if err := os.WriteFile(runs.GatewayLedger(dir), []byte(ledger), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() (string, string, int) {
		var out, errb bytes.Buffer
		env := &cli.Env{Name: "roster-runs", Stdout: &out, Stderr: &errb, Ctx: context.Background()}
		code := cli.MainEnv(env, &CLI{}, []string{"--home", h.Dir, "gateway", id})
		return out.String(), errb.String(), code
	}

	// live: this test process plays its supervisor
	self, err := runs.SelfBoxInfo("dobby", id, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := runs.WriteBoxInfo(dir, self); err != nil {
		t.Fatal(err)
	}
	out, errs, code := run()
	if code != 0 || errs != "" || !strings.Contains(out, "github.com:443") {
		t.Fatalf("live run: exit %d, stderr %q, stdout %q", code, errs, out)
	}

	// over: the supervisor gone
	self.PID, self.StartTime = 0, 0
	if err := runs.WriteBoxInfo(dir, self); err != nil {
		t.Fatal(err)
	}
	out, errs, code = run()
	if code != 0 || !strings.Contains(errs, "line 2: no newline at its end") || !strings.Contains(out, "github.com:443") {
		t.Fatalf("finished run: exit %d, stderr %q, stdout %q", code, errs, out)
	}
}
