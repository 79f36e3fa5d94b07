package box

import (
	"fmt"
	"io"
	"strings"

	"github.com/roster-sh/roster/lib/agent"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/creds"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/gateway"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
)

// AgentRun is an agent worker's run (docs/agents.md): the agent, what it is
// given, where its executable is, and the reader of its event stream.
type AgentRun struct {
	Agent *agent.Agent
	Input agent.Input // the briefing is filled in when the box starts
	Exe   string      // the host path of its executable, as the box sees it
	// Missing is why the box would not see the agent (with its install
	// hint): the run then fails before the box starts.
	Missing error

	stream *agent.Stream // nil for an interactive run: a TUI is no event stream
	plan   *agent.Plan
}

// prepareAgent resolves an agent worker's run: its provider's route (the
// gateway's, or without a gateway the upstream with the operator's key
// variable), and where its executable is.
func prepareAgent(spec *config.Worker, org *config.Org, s *Spec) (*AgentRun, error) {
	a, err := agent.For(spec.Agent)
	if err != nil {
		return nil, err
	}
	name := a.Provider(spec.Model)
	p, ok := org.Gateway.Providers[name]
	if !ok {
		return nil, errs.New(errs.ErrUsage, fmt.Sprintf("worker %s: agent %s with model %q uses provider %q, which org.toml does not define ([gateway.%s])",
			spec.Name, a.Name, spec.Model, name, name))
	}
	in := agent.Input{Model: spec.Model, Args: spec.AgentArgs, BriefingPath: BoxBriefing,
		Provider: name, ProviderStyle: p.API}
	if s.Network == "gateway" {
		gp := creds.Provider{Name: name, Style: p.API}
		in.BaseURL = gateway.BoxBaseURL(gp, BoxGatewayURL)
		in.Key = envValue(s.Env, p.KeyEnv) // the placeholder the gateway set for a granted provider
		if in.Key == "" {
			in.Key = gateway.Placeholder(gp, false) // not granted: the gateway refuses it, visibly
		}
	} else {
		in.BaseURL, in.KeyEnv = p.Upstream, p.KeyEnv
	}
	ar := &AgentRun{Agent: a, Input: in}
	ar.Exe, ar.Missing = agent.Find(a, spec.Rootfs)
	return ar, nil
}

func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// startAgent makes the agent's plan once the briefing is compiled: the
// box's command and environment, and the run's agent folder with the
// generated configuration. It also decides whether the box's output is
// read as the agent's stream (not for a TUI on a terminal).
func (s *Supervision) startAgent(r *supervised) error {
	ar := s.Agent
	if ar == nil {
		return nil
	}
	if ar.Missing != nil {
		if h := errs.HintOf(ar.Missing); h != "" {
			return fmt.Errorf("%w (hint: %s)", ar.Missing, h)
		}
		return ar.Missing
	}
	sp := s.Spec
	in := ar.Input
	in.Briefing = string(r.brief)
	in.Interactive = s.Attached && s.Terminal != nil
	prepare := ar.Agent.Prepare
	if s.Live != nil {
		prepare = ar.Agent.PrepareLive // one process, a message a turn on stdin
	}
	plan, err := prepare(in)
	if err != nil {
		return err
	}
	sp.Command = plan.Command
	sp.Env = append(sp.Env, plan.Env...)
	sp.AgentDir = home.AgentDir(sp.RunDir)
	if err := agent.Setup(sp.AgentDir, sp.UID, plan); err != nil {
		return err
	}
	ar.plan = plan
	if !in.Interactive {
		ar.stream = agent.NewStream(ar.Agent.Name)
		s.Output = ar.stream
		name := ar.Agent.Name
		s.TranscriptFilter = func(w io.Writer) io.Writer { return agent.TranscriptFilter(name, w) }
	}
	return nil
}

// recordAgent puts the agent's record into run.json once its box has
// ended, notes an error the agent said it stopped on, and bounds the
// agent folder the box wrote.
func (s *Supervision) recordAgent(r *supervised) {
	ar := s.Agent
	if ar == nil || ar.plan == nil {
		return
	}
	rec := runs.AgentRecord{Name: ar.Agent.Name, Interactive: ar.stream == nil}
	if ar.stream != nil {
		rec = ar.stream.Record()
		if e := ar.stream.Error(); e != "" {
			if len(e) > 300 {
				e = e[:300] + "..."
			}
			r.ev.Note = joinNote(r.ev.Note, fmt.Sprintf("agent %s stopped on an error: %s", ar.Agent.Name, strings.ToValidUTF8(e, "?")))
		}
	}
	rec.Version = agent.Version(ar.Agent, ar.Exe)
	dir := s.Spec.AgentDir
	size, emptied, err := agent.Bound(dir, agent.MaxAgentDir)
	switch {
	case err != nil:
		r.ev.Note = joinNote(r.ev.Note, "agent folder: "+err.Error())
	case emptied:
		r.ev.Note = joinNote(r.ev.Note, fmt.Sprintf("agent folder held %d MiB, over %d MiB: emptied", size>>20, agent.MaxAgentDir>>20))
	case ar.stream != nil:
		rec.Session = ar.Agent.SessionFile(dir, ar.plan, ar.stream.SessionID())
	}
	r.rec.Agent = &rec
}
