package agent

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/roster-sh/roster/lib/errs"
)

const (
	route       = "http://127.0.0.1:3128/anthropic"
	placeholder = "sk-ant-api03-roster-placeholder-the-gateway-injects-the-real-key"
)

func anthropicInput() Input {
	return Input{Briefing: "# Briefing\ndo the task", BriefingPath: "/home/worker/self/briefing.md",
		Provider: "anthropic", ProviderStyle: "anthropic", BaseURL: route, Key: placeholder}
}

func TestForKnowsPiAndClaude(t *testing.T) {
	for _, n := range []string{"pi", "claude"} {
		if a, err := For(n); err != nil || a.Name != n || a.InstallHint == "" {
			t.Errorf("For(%q) = %+v, %v", n, a, err)
		}
	}
	if _, err := For("codex"); !errors.Is(err, errs.ErrUsage) {
		t.Errorf("For(codex): %v", err)
	}
	pi, _ := For("pi")
	if pi.Provider("") != "anthropic" || pi.Provider("openai/gpt-5") != "openai" {
		t.Error("pi's provider")
	}
}

func TestPiPlanPointsModelsJSONAtTheGateway(t *testing.T) {
	pi, _ := For("pi")
	in := anthropicInput()
	in.Model = "claude-sonnet-4-5"
	in.Args = []string{"--thinking", "low"}
	p, err := pi.Prepare(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"pi", "-p", "--mode", "json", "--offline", "--provider", "anthropic", "--model", "claude-sonnet-4-5",
		"--tools", "read,bash,edit,write", "--session-dir", BoxAgentDir + "/sessions", "--thinking", "low", "# Briefing\ndo the task"}
	if !reflect.DeepEqual(p.Command, want) {
		t.Errorf("command\n%q\nwant\n%q", p.Command, want)
	}
	if !reflect.DeepEqual(p.Env, []string{"PI_CODING_AGENT_DIR=" + BoxAgentDir + "/pi", "PI_OFFLINE=1"}) {
		t.Errorf("env %q", p.Env)
	}
	var models struct {
		Providers map[string]map[string]any
	}
	if err := json.Unmarshal(p.Files["pi/models.json"], &models); err != nil {
		t.Fatal(err)
	}
	a := models.Providers["anthropic"]
	if len(models.Providers) != 1 || a["baseUrl"] != route || a["apiKey"] != placeholder || a["models"] != nil {
		t.Errorf("models.json %s", p.Files["pi/models.json"])
	}
	if p.SessionDir != "sessions" || len(p.Files) != 1 {
		t.Errorf("plan %+v", p)
	}
}

func TestPiPlanForAnOrgProviderDefinesItsModel(t *testing.T) {
	pi, _ := For("pi")
	in := anthropicInput()
	in.Provider, in.ProviderStyle, in.BaseURL = "local", "openai", "http://127.0.0.1:3128/local/v1"
	if _, err := pi.Prepare(in); !errors.Is(err, errs.ErrUsage) {
		t.Errorf("no model: %v", err)
	}
	in.Model = "local/qwen3"
	p, err := pi.Prepare(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(p.Command, " "), "--provider local --model qwen3 ") {
		t.Errorf("command %q", p.Command)
	}
	s := string(p.Files["pi/models.json"])
	if !strings.Contains(s, `"api": "openai-completions"`) || !strings.Contains(s, `"id": "qwen3"`) || !strings.Contains(s, "/local/v1") {
		t.Errorf("models.json %s", s)
	}
}

func TestPiPromptNeverReadsAsAnOption(t *testing.T) {
	pi, _ := For("pi")
	for _, b := range []string{"--help", "@/etc/passwd"} {
		in := anthropicInput()
		in.Briefing = b
		p, _ := pi.Prepare(in)
		if last := p.Command[len(p.Command)-1]; last != "\n"+b {
			t.Errorf("prompt %q", last)
		}
	}
}

func TestPiLongBriefingIsNamedByPath(t *testing.T) {
	pi, _ := For("pi")
	in := anthropicInput()
	in.Briefing = strings.Repeat("x", maxPromptArg+1)
	p, _ := pi.Prepare(in)
	if last := p.Command[len(p.Command)-1]; last != "@/home/worker/self/briefing.md" {
		t.Errorf("prompt %q", last[:min(len(last), 40)])
	}
}

func TestInteractivePlansHaveNoPrompt(t *testing.T) {
	for _, n := range []string{"pi", "claude"} {
		a, _ := For(n)
		in := anthropicInput()
		in.Interactive = true
		p, err := a.Prepare(in)
		if err != nil {
			t.Fatal(err)
		}
		c := strings.Join(p.Command, " ")
		if strings.Contains(c, " -p ") || strings.Contains(c, " -- ") || !strings.Contains(c, "--append-system-prompt") {
			t.Errorf("%s interactive: %q", n, p.Command)
		}
	}
}

func TestClaudePlan(t *testing.T) {
	c, _ := For("claude")
	in := anthropicInput()
	p, err := c.Prepare(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "bypassPermissions", "--", "# Briefing\ndo the task"}
	if !reflect.DeepEqual(p.Command, want) {
		t.Errorf("command %q", p.Command)
	}
	env := strings.Join(p.Env, "\n") + "\n"
	for _, w := range []string{"CLAUDE_CONFIG_DIR=" + BoxAgentDir + "/claude", "ANTHROPIC_BASE_URL=" + route, "ANTHROPIC_API_KEY=" + placeholder} {
		if !strings.Contains(env, w+"\n") {
			t.Errorf("env lacks %s: %q", w, p.Env)
		}
	}
	var state struct {
		Onboarded bool                        `json:"hasCompletedOnboarding"`
		Keys      struct{ Approved []string } `json:"customApiKeyResponses"`
	}
	if err := json.Unmarshal(p.Files["claude/.claude.json"], &state); err != nil {
		t.Fatal(err)
	}
	if !state.Onboarded || len(state.Keys.Approved) != 1 || !strings.HasSuffix(placeholder, state.Keys.Approved[0]) || len(state.Keys.Approved[0]) != 20 {
		t.Errorf("state %+v", state)
	}
	in.ProviderStyle = "openai"
	if _, err := c.Prepare(in); !errors.Is(err, errs.ErrUsage) {
		t.Errorf("openai style: %v", err)
	}
}

func TestWithoutAGatewayTheKeyIsTheOperatorsVariable(t *testing.T) {
	in := anthropicInput()
	in.BaseURL, in.Key, in.KeyEnv = "https://models.example", "", "ANTHROPIC_API_KEY"
	pi, _ := For("pi")
	p, err := pi.Prepare(in)
	if err != nil || !strings.Contains(string(p.Files["pi/models.json"]), `"apiKey": "ANTHROPIC_API_KEY"`) {
		t.Errorf("pi: %v %s", err, p.Files["pi/models.json"])
	}
	c, _ := For("claude")
	p, err = c.Prepare(in)
	if err != nil || strings.Contains(strings.Join(p.Env, " "), "ANTHROPIC_API_KEY") || !strings.Contains(string(p.Files["claude/.claude.json"]), `"approved": []`) {
		t.Errorf("claude: %v %q %s", err, p.Env, p.Files["claude/.claude.json"])
	}
}

func TestPrepareNeedsARoute(t *testing.T) {
	pi, _ := For("pi")
	if _, err := pi.Prepare(Input{Briefing: "x"}); err == nil {
		t.Error("no route accepted")
	}
}

// writeExe makes an executable file (and its folders).
func writeExe(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestFindInARootfs(t *testing.T) {
	root := t.TempDir()
	pi, _ := For("pi")
	_, err := Find(pi, root)
	if !errors.Is(err, ErrNotInstalled) || errs.HintOf(err) != pi.InstallHint {
		t.Fatalf("empty rootfs: %v (hint %q)", err, errs.HintOf(err))
	}
	pkg := filepath.Join(root, "usr/lib/node_modules/@mariozechner/pi-coding-agent")
	writeExe(t, filepath.Join(pkg, "dist/cli.js"), "#!/usr/bin/env node\n")
	os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"@mariozechner/pi-coding-agent","version":"0.73.1"}`), 0o644)
	os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755)
	// An absolute link, resolved inside the rootfs, not on the host.
	os.Symlink("/usr/lib/node_modules/@mariozechner/pi-coding-agent/dist/cli.js", filepath.Join(root, "usr/bin/pi"))
	if _, err := Find(pi, root); !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "needs node") {
		t.Fatalf("no node: %v", err)
	}
	writeExe(t, filepath.Join(root, "usr/bin/node"), "")
	exe, err := Find(pi, root)
	if err != nil || exe != filepath.Join(pkg, "dist/cli.js") {
		t.Fatalf("Find = %q, %v", exe, err)
	}
	if v := Version(pi, exe); v != "0.73.1" {
		t.Errorf("version %q", v)
	}
	// A package.json of another package is not pi's version.
	c, _ := For("claude")
	if v := Version(c, exe); v != "" {
		t.Errorf("claude's version of pi's file: %q", v)
	}
}

func TestFindRefusesWhatTheBoxCannotRun(t *testing.T) {
	root := t.TempDir()
	c, _ := For("claude")
	os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755)
	for _, tc := range []struct{ name, setup string }{
		{"not executable", "plain"},
		{"a folder", "dir"},
		{"a link out of the root", "escape"},
		{"a link loop", "loop"},
	} {
		p := filepath.Join(root, "usr/bin/claude")
		os.RemoveAll(p)
		switch tc.setup {
		case "plain":
			os.WriteFile(p, nil, 0o644)
		case "dir":
			os.Mkdir(p, 0o755)
		case "escape":
			// ../../../.. stops at the root: this names ROOT/etc/passwd, absent.
			os.Symlink("../../../../../../etc/passwd", p)
		case "loop":
			os.Symlink("claude", p)
		}
		if _, err := Find(c, root); !errors.Is(err, ErrNotInstalled) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// The host's own install, when make deps-agents has put it there.
func TestFindOnTheHostsUsr(t *testing.T) {
	pi, _ := For("pi")
	exe, err := Find(pi, "")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v: CI installs it (make deps-agents)", err)
		}
		t.Skipf("pi not installed in /usr (make deps-agents): %v", err)
	}
	if !strings.HasPrefix(exe, "/usr/") || Version(pi, exe) == "" {
		t.Errorf("Find = %q, version %q", exe, Version(pi, exe))
	}
}
