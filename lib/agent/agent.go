package agent

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
)

// BoxHome is the box's $HOME and working folder (lib/box's BoxHome).
const BoxHome = "/home/worker"

// BoxAgentDir is where the run's agent folder (runs/RUN/agent on the host)
// is mounted in the box, writable: the agent's generated configuration and
// its session files live there, so they outlast the box's tmpfs $HOME.
const BoxAgentDir = BoxHome + "/self/agent"

// Agent is one agent CLI roster knows.
type Agent struct {
	Name       string // the spec's agent = "..."
	Executable string // looked up on the box's PATH
	Package    string // its npm package (for its version and the hint)
	// Needs are other executables it runs through (pi's #!/usr/bin/env node).
	Needs       []string
	InstallHint string
}

var agents = map[string]*Agent{
	"pi": {
		Name: "pi", Executable: "pi", Package: "@mariozechner/pi-coding-agent", Needs: []string{"node"},
		InstallHint: "install pi on the host (boxes see its /usr): npm install -g --prefix /usr @mariozechner/pi-coding-agent (needs node >= 20.6; roster's tests pin 0.73.1: make deps-agents)",
	},
	"claude": {
		Name: "claude", Executable: "claude", Package: "@anthropic-ai/claude-code",
		InstallHint: "install Claude Code on the host (boxes see its /usr): npm install -g --prefix /usr @anthropic-ai/claude-code (roster's tests pin 2.1.197: make deps-agents)",
	},
}

// Names lists the agents roster knows, sorted.
func Names() []string {
	out := make([]string, 0, len(agents))
	for n := range agents {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// For returns the agent called name; an unknown name is a usage error.
func For(name string) (*Agent, error) {
	if a, ok := agents[name]; ok {
		return a, nil
	}
	return nil, errs.New(errs.ErrUsage, fmt.Sprintf("agent %q: roster knows %s", name, strings.Join(Names(), ", ")))
}

// Provider is the model provider the agent uses for model (the worker's
// default gateway provider).
func (a *Agent) Provider(model string) string { return config.AgentProvider(a.Name, model) }

// Input is what a run gives an agent.
type Input struct {
	Model string   // the spec's model; "" = the agent's default
	Args  []string // the spec's agent_args, appended last
	// Briefing is the briefing's text, the headless prompt. BriefingPath is
	// the briefing in the box, named instead when the text is too long for
	// one argument.
	Briefing     string
	BriefingPath string
	// The model route: the provider's name and style as the gateway serves
	// it ("anthropic"/"anthropic", or an org.toml provider), its base URL in
	// the box (http://127.0.0.1:3128/anthropic) and the placeholder key.
	// Without a gateway (network "host" or "none") BaseURL is the
	// provider's upstream, Key is "" and KeyEnv names the variable the
	// operator's pass_env gives the key in (ANTHROPIC_API_KEY).
	Provider      string
	ProviderStyle string // "anthropic" or "openai"
	BaseURL       string
	Key           string
	KeyEnv        string
	Interactive   bool // the TUI on a terminal, no prompt given
}

// Plan is how a run starts the agent.
type Plan struct {
	Command []string // in the box
	Env     []string // NAME=VALUE, in addition to the box's own
	// Files are the generated configuration, by path relative to the run's
	// agent folder (host runs/RUN/agent, box BoxAgentDir); the supervisor
	// writes them before the box starts. They hold no secret.
	Files map[string][]byte
	// SessionDir is the folder, relative to the agent folder, the agent's
	// session files are written under.
	SessionDir string
}

// maxPromptArg bounds the briefing passed as one argument (Linux's
// MAX_ARG_STRLEN is 128 KiB); a longer one is named by its path.
const maxPromptArg = 96 << 10

// Prepare plans a run of a.
func (a *Agent) Prepare(in Input) (*Plan, error) {
	if in.BaseURL == "" || in.Key == "" && in.KeyEnv == "" {
		return nil, fmt.Errorf("agent %s: no model route or key", a.Name)
	}
	switch a.Name {
	case "pi":
		return preparePi(in)
	case "claude":
		return prepareClaude(in)
	}
	return nil, fmt.Errorf("agent %s: no plan", a.Name)
}

// prompt is the headless prompt: the briefing's text, or for pi a
// reference to the file (pi reads @PATH into the message).
func (in Input) prompt(fileRef string) (string, error) {
	if len(in.Briefing) <= maxPromptArg && in.Briefing != "" {
		return in.Briefing, nil
	}
	if in.BriefingPath == "" {
		return "", fmt.Errorf("agent: no briefing")
	}
	return fmt.Sprintf(fileRef, in.BriefingPath), nil
}

// pi (docs: pi's docs/models.md, docs/json.md). pi ignores
// ANTHROPIC_BASE_URL: its provider's baseUrl comes from models.json in its
// agent folder ($PI_CODING_AGENT_DIR), which also holds what pi writes of
// its own (auth.json, settings). Its sessions go to --session-dir.
const (
	piConfigDir  = "pi"
	piSessionDir = "sessions"
)

// piBuiltin are the providers pi ships models for: models.json only moves
// their baseUrl and key, so pi keeps its own model table (prices included).
var piBuiltin = map[string]bool{"anthropic": true, "openai": true}

func preparePi(in Input) (*Plan, error) {
	// models.json's apiKey is a literal or the name of a variable pi reads.
	key := in.Key
	if key == "" {
		key = in.KeyEnv
	}
	provider := map[string]any{"baseUrl": in.BaseURL, "apiKey": key}
	model := in.Model
	if p, m, ok := strings.Cut(model, "/"); ok && p == in.Provider {
		model = m
	}
	if !piBuiltin[in.Provider] {
		if model == "" {
			return nil, errs.New(errs.ErrUsage, fmt.Sprintf("agent pi: provider %q is not one pi knows: the worker needs a model", in.Provider))
		}
		api := "anthropic-messages"
		if in.ProviderStyle == "openai" {
			api = "openai-completions"
		}
		provider["api"] = api
		provider["models"] = []any{map[string]any{"id": model}}
	}
	models, err := json.MarshalIndent(map[string]any{"providers": map[string]any{in.Provider: provider}}, "", "  ")
	if err != nil {
		return nil, err
	}
	cmd := []string{"pi"}
	if !in.Interactive {
		cmd = append(cmd, "-p", "--mode", "json")
	}
	cmd = append(cmd, "--offline", "--provider", in.Provider)
	if model != "" {
		cmd = append(cmd, "--model", model)
	}
	cmd = append(cmd, "--tools", "read,bash,edit,write", "--session-dir", BoxAgentDir+"/"+piSessionDir)
	if in.Interactive {
		// The operator talks; the briefing is the agent's standing context.
		if in.BriefingPath != "" {
			cmd = append(cmd, "--append-system-prompt", in.BriefingPath)
		}
		cmd = append(cmd, in.Args...)
	} else {
		p, err := in.prompt("@%s")
		if err != nil {
			return nil, err
		}
		// pi has no "--": a prompt that starts like an option or a file
		// reference gets a leading newline instead.
		if p[0] == '-' || p[0] == '@' && p != "@"+in.BriefingPath {
			p = "\n" + p
		}
		cmd = append(cmd, in.Args...)
		cmd = append(cmd, p)
	}
	return &Plan{
		Command: cmd,
		Env: []string{
			"PI_CODING_AGENT_DIR=" + BoxAgentDir + "/" + piConfigDir,
			"PI_OFFLINE=1",
		},
		Files:      map[string][]byte{piConfigDir + "/models.json": append(models, '\n')},
		SessionDir: piSessionDir,
	}, nil
}

// Claude Code keeps its state in $CLAUDE_CONFIG_DIR (.claude.json and
// projects/CWD/SESSION.jsonl), reads ANTHROPIC_BASE_URL and sends
// ANTHROPIC_API_KEY as x-api-key. The box is its sandbox, so it runs
// without permission prompts.
const claudeConfigDir = "claude"

func prepareClaude(in Input) (*Plan, error) {
	if in.ProviderStyle != "anthropic" {
		return nil, errs.New(errs.ErrUsage, fmt.Sprintf("agent claude: provider %q does not speak the Anthropic API", in.Provider))
	}
	// The answers Claude Code asks for on a first start, given: onboarding
	// done, the (placeholder) key approved, which it keys by the key's last
	// 20 characters, and the working folder trusted.
	keyTail := in.Key
	if len(keyTail) > 20 {
		keyTail = keyTail[len(keyTail)-20:]
	}
	approved := []string{}
	if keyTail != "" {
		approved = append(approved, keyTail)
	}
	state, err := json.MarshalIndent(map[string]any{
		"hasCompletedOnboarding":        true,
		"bypassPermissionsModeAccepted": true,
		"customApiKeyResponses":         map[string]any{"approved": approved, "rejected": []string{}},
		// The box's working folder is the worker's own: no trust dialog.
		"projects": map[string]any{BoxHome: map[string]any{"hasTrustDialogAccepted": true}},
	}, "", "  ")
	if err != nil {
		return nil, err
	}
	cmd := []string{"claude"}
	if !in.Interactive {
		cmd = append(cmd, "-p", "--output-format", "stream-json", "--verbose")
	}
	cmd = append(cmd, "--permission-mode", "bypassPermissions")
	if in.Model != "" {
		cmd = append(cmd, "--model", in.Model)
	}
	if in.Interactive {
		if in.Briefing != "" && len(in.Briefing) <= maxPromptArg {
			cmd = append(cmd, "--append-system-prompt", in.Briefing)
		}
		cmd = append(cmd, in.Args...)
	} else {
		p, err := in.prompt("Your briefing is the file %s: read it first, then do what it asks.")
		if err != nil {
			return nil, err
		}
		cmd = append(cmd, in.Args...)
		cmd = append(cmd, "--", p)
	}
	env := []string{
		"CLAUDE_CONFIG_DIR=" + BoxAgentDir + "/" + claudeConfigDir,
		"ANTHROPIC_BASE_URL=" + in.BaseURL,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
	}
	if in.Key != "" { // else the operator's own ANTHROPIC_API_KEY (pass_env)
		env = append(env, "ANTHROPIC_API_KEY="+in.Key)
	}
	return &Plan{
		Command:    cmd,
		Env:        env,
		Files:      map[string][]byte{claudeConfigDir + "/.claude.json": append(state, '\n')},
		SessionDir: claudeConfigDir + "/projects",
	}, nil
}
