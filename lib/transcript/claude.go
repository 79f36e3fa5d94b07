package transcript

import (
	"encoding/json"
	"fmt"
	"strings"
)

// claudeMessage is the message of Claude Code's assistant and user events.
type claudeMessage struct {
	Role    string          `json:"role"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"`
}

// decodeClaude reads one of Claude Code's stream-json events; ok is false
// for a type it does not write.
func (d *decoder) decodeClaude(typ string, line []byte, n int) ([]Entry, bool) {
	switch typ {
	case "stream_event", "rate_limit_event", "control_response", "keep_alive":
		return nil, true
	case "system":
		var s struct {
			Subtype string `json:"subtype"`
			Model   string `json:"model"`
			Cwd     string `json:"cwd"`
		}
		if json.Unmarshal(line, &s) != nil {
			return nil, false
		}
		if s.Subtype == "init" {
			return []Entry{{Kind: Note, Text: fmt.Sprintf("claude session, model %s, in %s", s.Model, s.Cwd), Line: n}}, true
		}
		return []Entry{{Kind: Note, Text: "claude: " + s.Subtype, Line: n}}, true
	case "assistant", "user":
		var ev struct {
			Message claudeMessage `json:"message"`
		}
		if json.Unmarshal(line, &ev) != nil {
			return nil, false
		}
		return d.claudeMessage(typ, ev.Message, n), true
	case "result":
		return claudeResult(line, n)
	}
	return nil, false
}

func (d *decoder) claudeMessage(typ string, m claudeMessage, n int) []Entry {
	kind := User
	if typ == "assistant" {
		kind = Assistant
		if m.Model == "<synthetic>" { // Claude Code's own words, not the model's: an error
			kind = Error
		}
	}
	return d.entries(blocks(m.Content), kind, n)
}

// claudeResult is the run's last event: how it ended and what it cost.
func claudeResult(line []byte, n int) ([]Entry, bool) {
	var r struct {
		Subtype    string   `json:"subtype"`
		IsError    bool     `json:"is_error"`
		NumTurns   int      `json:"num_turns"`
		Result     string   `json:"result"`
		CostUSD    *float64 `json:"total_cost_usd"`
		StopReason string   `json:"stop_reason"`
		Status     *int     `json:"api_error_status"`
	}
	if json.Unmarshal(line, &r) != nil {
		return nil, false
	}
	parts := []string{plural(r.NumTurns, "turn")}
	if r.CostUSD != nil {
		parts = append(parts, fmt.Sprintf("$%.4f claimed", *r.CostUSD))
	}
	if r.StopReason != "" {
		parts = append(parts, "stop: "+r.StopReason)
	}
	if !r.IsError {
		return []Entry{{Kind: Note, Text: "result: " + r.Subtype + ", " + strings.Join(parts, ", "), Line: n}}, true
	}
	text := r.Result
	if r.Status != nil {
		text = fmt.Sprintf("%s (API status %d)", text, *r.Status)
	}
	return []Entry{{Kind: Error, Text: "the run ended in error: " + text + "; " + strings.Join(parts, ", "), Line: n}}, true
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
