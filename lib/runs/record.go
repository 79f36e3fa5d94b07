package runs

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// Evidence is the host's reasons for an attestation; the same shape in
// journal lines and run.json (docs/layout.md).
type Evidence struct {
	Exit           int    `json:"exit"`
	Signal         string `json:"signal"`
	Ceiling        bool   `json:"ceiling"`
	Report         string `json:"report"` // "complete" | "fail" | "none"
	Reason         string `json:"reason"`
	RefusedActions int    `json:"refused_actions"`
	Note           string `json:"note"`
	// The run's gateway refusals (docs/gateway.md, "What the run record
	// gains"): how many, and their kinds ("budget_spent", or
	// "host_denied 2, ip_literal 1").
	GatewayRefused  int    `json:"gateway_refused,omitempty"`
	GatewayRefusals string `json:"gateway_refusals,omitempty"`
}

// LiveRecord is a live session's part of run.json: its channel, and the
// relays it served, one a turn ("collect" may serve several in one).
type LiveRecord struct {
	Channel string   `json:"channel"`
	Turns   int      `json:"turns"`
	Tasks   []string `json:"tasks,omitempty"`
}

// Report is what the box said about its own work (evidence, not verdict).
type Report struct {
	Status string `json:"status"` // "complete" | "fail" | "none"
	Text   string `json:"text,omitempty"`
}

// Cost is what a run used, read from its cgroup before Destroy.
// WallSeconds is the box's time, from its container's start to its
// command's end; the post-run snapshot's time is SnapshotSeconds, apart.
type Cost struct {
	WallSeconds     float64 `json:"wall_seconds"`
	SnapshotSeconds float64 `json:"snapshot_seconds,omitempty"`
	CPUSeconds      float64 `json:"cpu_seconds"`
	MemoryPeakBytes uint64  `json:"memory_peak_bytes"`

	// Model usage, measured by the run's gateway (docs/gateway.md).
	ModelCalls       int      `json:"model_calls"`
	InputTokens      int64    `json:"input_tokens"`
	OutputTokens     int64    `json:"output_tokens"`
	CacheReadTokens  int64    `json:"cache_read_tokens"`
	CacheWriteTokens int64    `json:"cache_write_tokens"`
	USD              *float64 `json:"usd,omitempty"` // when every call was priced
	// Estimated: some call's usage was the gateway's estimate.
	Estimated bool `json:"estimated,omitempty"`
}

// ActionRecord is one action a run asked for and what became of it.
type ActionRecord struct {
	N       int    `json:"n"`
	Kind    string `json:"kind"`
	Outcome string `json:"outcome"` // "ok" or "refused: reason"
	Task    string `json:"task,omitempty"`
	Gate    string `json:"gate,omitempty"`
}

// Record is runs/RUN/run.json (docs/dispatch-and-box.md, "Run records"): written
// when the run starts and replaced when it ends. Nothing in it is written by
// the worker; it is all computed from what happened.
type Record struct {
	Format    int             `json:"format"`
	ID        string          `json:"id"`
	Worker    string          `json:"worker"`
	Task      string          `json:"task,omitempty"`
	Kind      string          `json:"kind"` // the task's kind, or "adhoc"
	Standing  string          `json:"standing,omitempty"`
	Channel   string          `json:"channel"`
	StartedAt time.Time       `json:"started_at"`
	EndedAt   *time.Time      `json:"ended_at,omitempty"`
	Ended     string          `json:"ended,omitempty"` // "done" | "error" | "ceiling" | "idle"; empty while live
	ExitCode  *int            `json:"exit_code,omitempty"`
	Signal    string          `json:"signal"`
	Report    Report          `json:"report"`
	Attested  string          `json:"attested"` // completed | failed | needs-review | canceled | "" (ad-hoc)
	Evidence  *Evidence       `json:"evidence,omitempty"`
	Ceiling   string          `json:"ceiling"`
	Cost      Cost            `json:"cost"`
	Actions   []ActionRecord  `json:"actions"`
	Snapshot  string          `json:"snapshot"`           // snapshot id, "unchanged", "store busy", "snapshots unavailable", ...
	Gateway   *GatewaySummary `json:"gateway,omitempty"`  // a box whose gateway was served
	Agent     *AgentRecord    `json:"agent,omitempty"`    // an agent worker's run
	Live      *LiveRecord     `json:"session,omitempty"`  // a channel's live session (docs/channels.md)
	Notified  *Notified       `json:"notified,omitempty"` // the [notify] on_failure hook, when it ran
	Git       *GitRecord      `json:"git,omitempty"`      // a run with [[repo]] grants that pushed (docs/repos.md)
}

// GitRecord is run.json's "git": each ref a push of the run asked to
// update and its outcome.
type GitRecord struct {
	Pushes    []GitRef      `json:"pushes"`
	Knowledge *GitKnowledge `json:"knowledge,omitempty"`
}

// GitKnowledge is run.json's git.knowledge: the run's access to its
// worker's knowledge repo, its own branch, and what it landed on main.
type GitKnowledge struct {
	Access  string `json:"access"`           // "write" or "read"
	Branch  string `json:"branch,omitempty"` // run/RUN (write access)
	Landed  string `json:"landed"`           // the last commit it landed on main ("" = none)
	Commits int    `json:"commits,omitempty"`
}

// Notified is how a run's [notify] on_failure hook went.
type Notified struct {
	Command []string `json:"command"`
	Exit    int      `json:"exit"` // -1: it did not exit by itself (killed at its bound, or never started)
	Seconds float64  `json:"seconds"`
	Error   string   `json:"error,omitempty"`
	Output  string   `json:"output,omitempty"` // the tail of its stdout and stderr
}

// WriteRecord writes runDir/run.json atomically.
func WriteRecord(runDir string, r *Record) error {
	r.Format = 1
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return fsx.WriteFile(home.RunJSON(runDir), append(data, '\n'), 0o644)
}

// ReadRecord reads runDir/run.json, refusing a corrupt file or an unknown
// format (exit 14).
func ReadRecord(runDir string) (*Record, error) {
	path := home.RunJSON(runDir)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %v: %w", path, err, errs.ErrRefused)
	}
	if r.Format != 1 {
		return nil, fmt.Errorf("%s: unknown format %d: %w", path, r.Format, errs.ErrRefused)
	}
	return &r, nil
}

// Summary is the evidence in a few words, as roster-runs show prints it:
// "exit 0, report complete", "exit -1, signal SIGKILL, ceiling, report none".
func (ev *Evidence) Summary() string {
	parts := []string{fmt.Sprintf("exit %d", ev.Exit)}
	if ev.Signal != "" {
		parts = append(parts, "signal "+ev.Signal)
	}
	if ev.Ceiling {
		parts = append(parts, "ceiling")
	}
	if ev.Report != "" {
		parts = append(parts, "report "+ev.Report)
	}
	if ev.Reason != "" {
		parts = append(parts, fmt.Sprintf("reason %q", ev.Reason))
	}
	if ev.RefusedActions > 0 {
		parts = append(parts, fmt.Sprintf("%d refused actions", ev.RefusedActions))
	}
	if ev.Note != "" {
		parts = append(parts, ev.Note)
	}
	return strings.Join(parts, ", ")
}
