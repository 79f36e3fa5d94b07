package agent

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/roster-sh/roster/lib/runs"
)

// Stream reads an agent's event stream (pi's --mode json, Claude Code's
// --output-format stream-json: one JSON object a line) as it is written,
// and keeps what run.json's agent record needs. Write never fails and never
// blocks on anything but its own mutex, so it can sit in a tee beside the
// transcript; anything that is not an event it knows is skipped. A line
// longer than MaxLine is dropped whole (pi repeats the growing message in
// every update, so long lines are routine and carry nothing the record
// lacks from the shorter message_end).
type Stream struct {
	name string

	mu       sync.Mutex
	line     []byte
	skipping bool // inside a line longer than MaxLine

	turns      int
	stopReason string
	finalText  string
	errText    string
	cost       float64
	costSeen   bool
	sessionID  string
	// claude: assistant lines come one per content block, several per
	// message; turns count distinct message ids until its result line.
	lastMsgID string
	result    bool
}

// MaxLine bounds one event line kept for parsing.
const MaxLine = 1 << 20

// MaxFinalText bounds the final text in the record (docs/agents.md).
const MaxFinalText = 2 << 10

// NewStream returns a reader for the agent called name ("pi", "claude").
func NewStream(name string) *Stream { return &Stream{name: name} }

// Write takes the next bytes of the stream.
func (s *Stream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !s.skipping {
			if len(s.line)+len(chunk) > MaxLine {
				s.skipping, s.line = true, s.line[:0]
			} else {
				s.line = append(s.line, chunk...)
			}
		}
		if i < 0 {
			break
		}
		if !s.skipping {
			s.event(s.line)
		}
		s.skipping, s.line = false, s.line[:0]
		p = p[i+1:]
	}
	return n, nil
}

// Record is what the stream said so far (a torn last line is left out).
// Version and Session are the caller's to fill: the stream does not know
// them.
func (s *Stream) Record() runs.AgentRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := runs.AgentRecord{Name: s.name, Turns: s.turns, StopReason: s.stopReason, FinalText: s.finalText}
	if s.costSeen {
		c := s.cost
		r.CostUSD = &c
	}
	return r
}

// Error is the error the agent said it stopped on ("" for none): pi's
// errorMessage, Claude Code's error result.
func (s *Stream) Error() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errText
}

// SessionID is the id the agent gave its session ("" until it says): pi
// names its session file TIME_ID.jsonl, Claude Code ID.jsonl.
func (s *Stream) SessionID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessionID
}

func (s *Stream) event(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return
	}
	switch s.name {
	case "pi":
		s.piEvent(line)
	case "claude":
		s.claudeEvent(line)
	}
}

// pi's events (pi's docs/json.md): the session header, then agent, turn
// and message events; each assistant message ends in one message_end.
type piEvent struct {
	Type    string     `json:"type"`
	ID      string     `json:"id"` // the session header's
	Message *piMessage `json:"message"`
}

type piMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	StopReason string          `json:"stopReason"`
	Error      string          `json:"errorMessage"`
	Usage      struct {
		Cost struct {
			Total *float64 `json:"total"`
		} `json:"cost"`
	} `json:"usage"`
}

func (s *Stream) piEvent(line []byte) {
	var ev piEvent
	if json.Unmarshal(line, &ev) != nil {
		return
	}
	switch ev.Type {
	case "session":
		if s.sessionID == "" {
			s.sessionID = bounded(ev.ID, 128)
		}
	case "message_end":
		m := ev.Message
		if m == nil || m.Role != "assistant" {
			return
		}
		s.turns++
		s.stopReason = bounded(m.StopReason, 64)
		s.finalText = bounded(textOf(m.Content), MaxFinalText)
		s.errText = bounded(m.Error, MaxFinalText)
		if c := m.Usage.Cost.Total; c != nil {
			s.cost += *c
			s.costSeen = true
		}
	}
}

// Claude Code's stream-json: a system init line, one assistant line per
// content block, user lines with tool results, and a closing result line
// that says the turns, the stop reason, the final text and the cost.
type claudeEvent struct {
	Type      string   `json:"type"`
	Subtype   string   `json:"subtype"`
	SessionID string   `json:"session_id"`
	IsError   bool     `json:"is_error"`
	NumTurns  *int     `json:"num_turns"`
	Result    *string  `json:"result"`
	Stop      string   `json:"stop_reason"`
	CostUSD   *float64 `json:"total_cost_usd"`
	Errors    []string `json:"errors"`
	Message   *struct {
		ID         string          `json:"id"`
		Content    json.RawMessage `json:"content"`
		StopReason string          `json:"stop_reason"`
	} `json:"message"`
}

func (s *Stream) claudeEvent(line []byte) {
	var ev claudeEvent
	if json.Unmarshal(line, &ev) != nil {
		return
	}
	if s.sessionID == "" && ev.SessionID != "" {
		s.sessionID = bounded(ev.SessionID, 128)
	}
	switch ev.Type {
	case "assistant":
		if ev.Message == nil || s.result {
			return
		}
		if ev.Message.ID != s.lastMsgID || ev.Message.ID == "" {
			s.turns++
			s.lastMsgID = ev.Message.ID
			s.finalText = ""
		}
		if t := textOf(ev.Message.Content); t != "" {
			s.finalText = bounded(joinText(s.finalText, t), MaxFinalText)
		}
		if ev.Message.StopReason != "" {
			s.stopReason = bounded(ev.Message.StopReason, 64)
		}
	case "result":
		s.result = true
		if ev.NumTurns != nil && *ev.NumTurns >= 0 {
			s.turns = *ev.NumTurns
		}
		if ev.Result != nil {
			s.finalText = bounded(*ev.Result, MaxFinalText)
		}
		s.stopReason = bounded(ev.Stop, 64)
		if ev.Subtype != "" && ev.Subtype != "success" && s.stopReason == "" {
			s.stopReason = bounded(ev.Subtype, 64)
		}
		if ev.IsError {
			msg := ev.Subtype
			if len(ev.Errors) > 0 {
				msg = strings.Join(ev.Errors, "; ")
			} else if ev.Result != nil {
				msg = *ev.Result
			}
			s.errText = bounded(msg, MaxFinalText)
		}
		if ev.CostUSD != nil {
			s.cost, s.costSeen = *ev.CostUSD, true
		}
	}
}

// textOf joins the text blocks of a message's content (a string, or a
// list of blocks of which those of type "text" count).
func textOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return str
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var out string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			out = joinText(out, b.Text)
		}
	}
	return out
}

func joinText(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}

// bounded cuts s to at most n bytes on a rune boundary and makes it valid
// UTF-8.
func bounded(s string, n int) string {
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
