package runs

import (
	"path/filepath"
	"time"
)

// GatewayLedger is runs/RUN/gateway.jsonl: one LedgerEntry a line.
func GatewayLedger(runDir string) string { return filepath.Join(runDir, "gateway.jsonl") }

// LedgerEntry is one line of a run's gateway ledger (docs/gateway.md, "The
// ledger"): a request or tunnel as the gateway saw it, appended when it
// ends (a tunnel also when it opens, with Open set). It never holds a
// credential, a header value or a body.
type LedgerEntry struct {
	Seq      int64     `json:"seq"`
	At       time.Time `json:"at"`
	Kind     string    `json:"kind"` // "model", "connect", "http", or "" for a request refused before it had one (bad_request)
	Open     bool      `json:"open,omitempty"`
	Provider string    `json:"provider,omitempty"`
	Method   string    `json:"method"`
	Host     string    `json:"host"`
	Port     int       `json:"port,omitempty"`
	Path     string    `json:"path,omitempty"` // model routes only, no query
	Decision string    `json:"decision"`       // "allowed" | "refused"
	Refusal  string    `json:"refusal,omitempty"`
	Status   int       `json:"status"`
	BytesUp  int64     `json:"bytes_up"`
	BytesDn  int64     `json:"bytes_down"`
	MS       int64     `json:"ms"`

	Model            string   `json:"model,omitempty"`
	InputTokens      int64    `json:"input_tokens,omitempty"`
	OutputTokens     int64    `json:"output_tokens,omitempty"`
	CacheReadTokens  int64    `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64    `json:"cache_write_tokens,omitempty"`
	CostUSD          *float64 `json:"cost_usd,omitempty"` // when the model is priced
	RequestID        string   `json:"request_id,omitempty"`
	// Estimated: the upstream told no (final) usage, and the tokens are
	// the gateway's estimate (docs/gateway.md).
	Estimated bool `json:"estimated,omitempty"`

	// A git request (Kind "git", docs/repos.md): the repo, the service
	// (upload-pack, receive-pack) and, for a push, each ref's end.
	Repo    string   `json:"repo,omitempty"`
	Service string   `json:"service,omitempty"`
	Refs    []GitRef `json:"refs,omitempty"`

	// Dropped is set on the one line a ledger ends with when it reached its
	// size bound (Kind "capped"): how many lines were counted, not written.
	Dropped int64 `json:"dropped,omitempty"`
}

// Refusal kinds (docs/gateway.md, "Refusals"): the X-Roster-Refusal header,
// the ledger's refusal field and the keys of GatewaySummary.Refusals.
const (
	RefuseHostDenied         = "host_denied"
	RefuseIPLiteral          = "ip_literal"
	RefusePrivateAddress     = "private_address"
	RefuseProviderNotGranted = "provider_not_granted"
	RefuseRouteDenied        = "route_denied"
	RefuseNoCredential       = "no_credential"
	RefuseCredentialExpired  = "credential_expired"
	RefuseCredentialRejected = "credential_rejected"
	RefuseBudgetSpent        = "budget_spent"
	RefuseModelUnpriced      = "model_unpriced"
	RefuseBadRequest         = "bad_request"
)

// GitRef is one ref a push asked to update and what became of it:
// outcome "pushed", "gated", "refused" or "upstream_rejected".
type GitRef struct {
	Repo    string `json:"repo,omitempty"` // run.json's git.pushes name it (a ledger line names it once)
	Ref     string `json:"ref"`
	Old     string `json:"old"`
	New     string `json:"new"`
	Outcome string `json:"outcome"`
	Refusal string `json:"refusal,omitempty"`
}

// GatewaySummary is run.json's "gateway": what the run's gateway served
// and refused.
type GatewaySummary struct {
	Requests    int            `json:"requests"`
	Refused     int            `json:"refused"`
	Refusals    map[string]int `json:"refusals"`
	LastRefusal *LastRefusal   `json:"last_refusal,omitempty"`
}

// LastRefusal is the newest refusal of a run: its kind and what was asked
// for (host:port, or the model route).
type LastRefusal struct {
	Kind   string `json:"kind"`
	Target string `json:"target"`
}

// AgentRecord is run.json's "agent" (docs/agents.md): what the agent's own
// event stream said. It is evidence, never the verdict, and its cost claim
// is the agent's; the gateway's figures in Cost are the ones that count.
type AgentRecord struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	Turns   int    `json:"turns"`
	// Interactive: a terminal session (roster worker run -t): no event
	// stream was read, so turns and the rest are not known.
	Interactive bool     `json:"interactive,omitempty"`
	StopReason  string   `json:"stop_reason,omitempty"`
	FinalText   string   `json:"final_text,omitempty"` // its first 2 KiB
	CostUSD     *float64 `json:"cost_usd,omitempty"`   // the agent's claim
	Session     string   `json:"session,omitempty"`    // its session file, relative to the run folder
}
