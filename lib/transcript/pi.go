package transcript

import (
	"encoding/json"
	"fmt"
)

// piQuiet are pi's events that repeat what message_end says whole, or
// only mark a step: they are left out.
var piQuiet = map[string]bool{
	"agent_start": true, "agent_end": true, "turn_start": true, "turn_end": true,
	"message_start": true, "message_update": true,
	"tool_execution_start": true, "tool_execution_update": true, "tool_execution_end": true,
	"auto_compaction_start": true, "auto_retry_start": true, "auto_retry_end": true,
}

// piMessage is the message of pi's message_end.
type piMessage struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	StopReason   string          `json:"stopReason"`
	ErrorMessage string          `json:"errorMessage"`
	ToolCallID   string          `json:"toolCallId"`
	ToolName     string          `json:"toolName"`
	IsError      bool            `json:"isError"`
	Model        string          `json:"model"`
}

// decodePi reads one of pi's events; ok is false for a type pi does not
// write.
func (d *decoder) decodePi(typ string, line []byte, n int) ([]Entry, bool) {
	if piQuiet[typ] {
		return nil, true
	}
	switch typ {
	case "session":
		var s struct {
			ID  string `json:"id"`
			Cwd string `json:"cwd"`
		}
		if json.Unmarshal(line, &s) != nil {
			return nil, false
		}
		return []Entry{{Kind: Note, Text: fmt.Sprintf("pi session %s in %s", s.ID, s.Cwd), Line: n}}, true
	case "response": // rpc mode: the answer to a command roster sent
		var r struct {
			Command string `json:"command"`
			Success bool   `json:"success"`
			Error   string `json:"error"`
		}
		if json.Unmarshal(line, &r) != nil {
			return nil, false
		}
		if r.Success {
			return nil, true
		}
		return []Entry{{Kind: Error, Text: fmt.Sprintf("pi refused %s: %s", r.Command, r.Error), Line: n}}, true
	case "message_end":
		var ev struct {
			Message piMessage `json:"message"`
		}
		if json.Unmarshal(line, &ev) != nil {
			return nil, false
		}
		return d.piMessage(ev.Message, n), true
	}
	return nil, false
}

func (d *decoder) piMessage(m piMessage, n int) []Entry {
	bs := blocks(m.Content)
	switch m.Role {
	case "user":
		return []Entry{{Kind: User, Text: joinText(bs), Line: n}}
	case "toolResult":
		return []Entry{{Kind: ToolResult, Tool: m.ToolName, ID: m.ToolCallID, Text: joinText(bs), IsError: m.IsError, Line: n}}
	case "assistant":
		es := d.entries(bs, Assistant, n)
		if m.StopReason == "error" || m.StopReason == "aborted" {
			text := m.ErrorMessage
			if text == "" {
				text = "the model's answer stopped: " + m.StopReason
			}
			es = append(es, Entry{Kind: Error, Text: text, Line: n})
		}
		return es
	}
	return []Entry{{Kind: Note, Text: fmt.Sprintf("a %s message: %s", m.Role, joinText(bs)), Line: n}}
}
