// Package agent is what the supervisor knows about each agent CLI a
// worker can run instead of a command (docs/agents.md): pi and Claude Code.
//
// For an agent it gives the in-box command line that runs it headless with
// the briefing as its prompt (or its TUI, interactively), the environment
// and the generated per-run configuration that point it at the gateway's
// route with a placeholder key, where its session files go (the run's
// agent folder, BoxAgentDir in the box), how to find its executable and
// version on the host, and a reader of its event stream (Stream) that
// turns what the agent said into run.json's agent record.
//
// Everything the agent writes (its stream, its session files) is hostile:
// the stream reader bounds every line and every field it keeps, and its
// record is evidence, never the verdict.
package agent
