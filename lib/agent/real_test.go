package agent

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/internal/testbin"
	"github.com/roster-sh/roster/lib/fakemodel"
)

// TestRealAgentOnTheHostFollowsTheScript runs the real agent CLI (from the
// host's /usr, as make deps-agents installs it) outside any box, with the
// configuration Prepare generates, against the scripted model: the bash
// tool call runs, the agent ends on the final text, its stream makes the
// record, and the model saw the key of the configuration. Box paths are
// mapped into a temporary folder.
//
// The agent runs in a network namespace of its own with loopback only (an
// agent may look up and dial public hosts: update checks, telemetry): the
// scripted model serves on a Unix socket, which roster-reaper's relay, as
// in a box, makes 127.0.0.1:3128 in that namespace.
func TestRealAgentOnTheHostFollowsTheScript(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a network namespace of its own needs root (CI runs as root)")
	}
	bin, remove := testbin.Temp("roster-reaper")
	defer remove()
	for _, tc := range []struct{ test, agent, tool, provider, style, model, path string }{
		{"pi", "pi", "bash", "anthropic", "anthropic", "", "/v1/messages"},
		{"claude", "claude", "Bash", "anthropic", "anthropic", "", "/v1/messages"},
		// an org.toml provider with the OpenAI API: pi's chat completions
		{"pi-openai", "pi", "bash", "local", "openai", "local/qwen3", "/v1/chat/completions"},
	} {
		t.Run(tc.test, func(t *testing.T) {
			a, _ := For(tc.agent)
			exe, err := Find(a, "")
			if err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("%v: CI installs it (make deps-agents)", err)
				}
				t.Skipf("%v (make deps-agents installs it)", err)
			}
			const key = "sk-ant-api03-test-key-the-model-expects"
			dir := t.TempDir()
			home := filepath.Join(dir, "home")
			os.MkdirAll(filepath.Join(home, "store"), 0o755)
			script := fakemodel.Script{Turns: []fakemodel.Turn{
				{Text: "Writing the note.", Tool: &fakemodel.ToolCall{Name: tc.tool,
					Input: map[string]any{"command": "echo from-the-agent > ~/store/note.txt && echo note written"}}},
				{Text: "The note is in the store."},
			}}
			srv := fakemodel.New(key, script)
			sock := filepath.Join(dir, "model.sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			hs := &http.Server{Handler: srv}
			go hs.Serve(ln)
			defer hs.Close()

			base := "http://127.0.0.1:3128"
			if tc.style == "openai" {
				base += "/v1"
			}
			p, err := a.Prepare(Input{Briefing: "Write a note into your store.", Model: tc.model, Provider: tc.provider,
				ProviderStyle: tc.style, BaseURL: base, Key: key})
			if err != nil {
				t.Fatal(err)
			}
			agentDir := filepath.Join(dir, "agent")
			for name, b := range p.Files {
				os.MkdirAll(filepath.Dir(filepath.Join(agentDir, name)), 0o755)
				os.WriteFile(filepath.Join(agentDir, name), b, 0o644)
			}
			mapPath := func(s string) string { return strings.ReplaceAll(s, BoxAgentDir, agentDir) }
			args := make([]string, len(p.Command)-1)
			for i, c := range p.Command[1:] {
				args[i] = mapPath(c)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			// unshare: loopback only; roster-reaper relays 127.0.0.1:3128 to the socket
			wrap := append([]string{"--net", "--", "/bin/sh", "-c", `ip link set lo up && exec "$0" "$@"`,
				filepath.Join(bin, "roster-reaper"), "--gateway=127.0.0.1:3128," + sock, "--", exe}, args...)
			cmd := exec.CommandContext(ctx, "unshare", wrap...)
			cmd.Dir = home
			cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin:/usr/sbin:/sbin", "IS_SANDBOX=1"} // claude refuses bypassPermissions as root elsewhere
			for _, e := range p.Env {
				cmd.Env = append(cmd.Env, mapPath(e))
			}
			var stderr bytes.Buffer
			stream := NewStream(a.Name)
			cmd.Stdout, cmd.Stderr = stream, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s: %v\n%s", a.Name, err, stderr.String())
			}
			if b, err := os.ReadFile(filepath.Join(home, "store/note.txt")); err != nil || string(b) != "from-the-agent\n" {
				t.Errorf("note: %q %v", b, err)
			}
			r := stream.Record()
			if r.Turns != 2 || r.FinalText != "The note is in the store." || stream.Error() != "" || stream.SessionID() == "" {
				t.Errorf("record %+v error %q", r, stream.Error())
			}
			calls := srv.Calls()
			if len(calls) < 2 {
				t.Fatalf("calls %+v", calls)
			}
			for _, c := range calls {
				if c.Key != key || c.Status != 200 || c.Path != tc.path {
					t.Errorf("call %+v", c)
				}
			}
			if last := calls[len(calls)-1]; !strings.Contains(last.LastUser, "note written") {
				t.Errorf("the tool result did not reach the model: %q", last.LastUser)
			}
			sessions, _ := filepath.Glob(filepath.Join(agentDir, p.SessionDir, "*"))
			if len(sessions) == 0 {
				t.Errorf("no session under %s", p.SessionDir)
			}
		})
	}
}
