package transcript

import (
	"bytes"
	"encoding/json"
	"strings"
)

// block is one part of a message's content, in either agent's shape.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"` // pi's toolCall
	Input     json.RawMessage `json:"input"`     // Claude Code's tool_use
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // Claude Code's tool_result
	IsError   bool            `json:"is_error"`
}

// blocks reads a content field: a plain string is one text block.
func blocks(raw json.RawMessage) []block {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil
		}
		return []block{{Type: "text", Text: s}}
	}
	var bs []block
	if json.Unmarshal(raw, &bs) != nil {
		return nil
	}
	return bs
}

// joinText is the text of the text blocks, one after another; other
// blocks (an image) stand as [TYPE].
func joinText(bs []block) string {
	var parts []string
	for _, b := range bs {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "":
		default:
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}

// compact is a tool call's arguments as one line of JSON ("" for none).
func compact(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

// entries are a message's content blocks as steps, in either agent's
// shape: text as textKind, thinking, a tool call (pi's toolCall with its
// arguments, Claude Code's tool_use with its input: its name remembered
// by id), a tool result (Claude Code's, named by the remembered call).
func (d *decoder) entries(bs []block, textKind string, n int) []Entry {
	var es []Entry
	for _, b := range bs {
		switch b.Type {
		case "text":
			if b.Text != "" {
				es = append(es, Entry{Kind: textKind, Text: b.Text, Line: n})
			}
		case "thinking":
			if b.Thinking != "" {
				es = append(es, Entry{Kind: Thinking, Text: b.Thinking, Line: n})
			}
		case "toolCall":
			es = append(es, Entry{Kind: ToolCall, Tool: b.Name, ID: b.ID, Args: compact(b.Arguments), Line: n})
		case "tool_use":
			d.remember(b.ID, b.Name)
			es = append(es, Entry{Kind: ToolCall, Tool: b.Name, ID: b.ID, Args: compact(b.Input), Line: n})
		case "tool_result":
			es = append(es, Entry{Kind: ToolResult, Tool: d.tools[b.ToolUseID], ID: b.ToolUseID,
				Text: joinText(blocks(b.Content)), IsError: b.IsError, Line: n})
		}
	}
	return es
}
