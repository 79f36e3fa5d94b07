package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// request is the part of an Anthropic or OpenAI request body the server
// reads.
type request struct {
	Model         string    `json:"model"`
	Stream        bool      `json:"stream"`
	Messages      []message `json:"messages"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func (r *request) assistantTurns() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

const maxLastUser = 4 << 10

// lastUser flattens the text of the last user (or OpenAI tool) message.
func (r *request) lastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role != "user" && m.Role != "tool" {
			continue
		}
		var b strings.Builder
		flatten(&b, m.Content, 0)
		s := b.String()
		if len(s) > maxLastUser {
			s = s[:maxLastUser]
		}
		return s
	}
	return ""
}

// flatten appends the text found in a content value: a string, or a list
// of blocks whose text, or whose content (a tool result's), is flattened
// in turn.
func flatten(b *strings.Builder, raw json.RawMessage, depth int) {
	flattenTo(b, raw, depth, maxLastUser)
}

// flattenTo is flatten stopping past limit bytes.
func flattenTo(b *strings.Builder, raw json.RawMessage, depth, limit int) {
	if depth > 4 || len(raw) == 0 || b.Len() > limit {
		return
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		b.WriteString(s)
		return
	}
	var blocks []struct {
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return
	}
	for _, bl := range blocks {
		if b.Len() > 0 && (bl.Text != "" || len(bl.Content) > 0) {
			b.WriteByte('\n')
		}
		b.WriteString(bl.Text)
		flattenTo(b, bl.Content, depth+1, limit)
	}
}

// answer writes one scripted turn in a provider's format.
type answer struct {
	turn  Turn
	seq   int // 1-based, for ids
	model string
}

func (a answer) toolInput() string {
	in := a.turn.Tool.Input
	if in == nil {
		in = map[string]any{}
	}
	b, _ := json.Marshal(in)
	return string(b)
}

func (a answer) toolID(prefix string) string { return fmt.Sprintf("%s_fake_%d", prefix, a.seq) }

// chunks splits s into pieces of at most n bytes (on rune boundaries), so a
// stream carries more than one delta.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		cut := n
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		if cut == 0 {
			cut = n
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return sse{w, f}
}

// event writes one server-sent event; name "" writes a data-only event
// (OpenAI's form).
func (s sse) event(name string, data any) {
	var b []byte
	if str, ok := data.(string); ok {
		b = []byte(str)
	} else {
		b, _ = json.Marshal(data)
	}
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	if s.f != nil {
		s.f.Flush()
	}
}

type obj = map[string]any

func (a answer) anthropicStopReason() string {
	if a.turn.Tool != nil {
		return "tool_use"
	}
	return "end_turn"
}

func (a answer) anthropicUsage() obj {
	in, out, cr, cw := a.turn.usage()
	return obj{"input_tokens": in, "output_tokens": out,
		"cache_read_input_tokens": cr, "cache_creation_input_tokens": cw}
}

func (a answer) anthropicStream(w http.ResponseWriter) {
	s := newSSE(w)
	in, out, cr, cw := a.turn.usage()
	s.event("message_start", obj{"type": "message_start", "message": obj{
		"id": fmt.Sprintf("msg_fake_%d", a.seq), "type": "message", "role": "assistant",
		"model": a.model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": obj{"input_tokens": in, "output_tokens": 1,
			"cache_read_input_tokens": cr, "cache_creation_input_tokens": cw}}})
	s.event("ping", obj{"type": "ping"})
	idx := 0
	if a.turn.Text != "" || a.turn.Tool == nil {
		s.event("content_block_start", obj{"type": "content_block_start", "index": idx,
			"content_block": obj{"type": "text", "text": ""}})
		for _, c := range chunks(a.turn.Text, 24) {
			s.event("content_block_delta", obj{"type": "content_block_delta", "index": idx,
				"delta": obj{"type": "text_delta", "text": c}})
		}
		s.event("content_block_stop", obj{"type": "content_block_stop", "index": idx})
		idx++
	}
	if a.turn.Tool != nil {
		s.event("content_block_start", obj{"type": "content_block_start", "index": idx,
			"content_block": obj{"type": "tool_use", "id": a.toolID("toolu"), "name": a.turn.Tool.Name, "input": obj{}}})
		for _, c := range chunks(a.toolInput(), 32) {
			s.event("content_block_delta", obj{"type": "content_block_delta", "index": idx,
				"delta": obj{"type": "input_json_delta", "partial_json": c}})
		}
		s.event("content_block_stop", obj{"type": "content_block_stop", "index": idx})
	}
	s.event("message_delta", obj{"type": "message_delta",
		"delta": obj{"stop_reason": a.anthropicStopReason(), "stop_sequence": nil},
		"usage": obj{"output_tokens": out}})
	s.event("message_stop", obj{"type": "message_stop"})
}

func (a answer) anthropicJSON(w http.ResponseWriter) {
	content := []any{}
	if a.turn.Text != "" || a.turn.Tool == nil {
		content = append(content, obj{"type": "text", "text": a.turn.Text})
	}
	if a.turn.Tool != nil {
		var in any
		_ = json.Unmarshal([]byte(a.toolInput()), &in)
		content = append(content, obj{"type": "tool_use", "id": a.toolID("toolu"), "name": a.turn.Tool.Name, "input": in})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(obj{"id": fmt.Sprintf("msg_fake_%d", a.seq), "type": "message",
		"role": "assistant", "model": a.model, "content": content,
		"stop_reason": a.anthropicStopReason(), "stop_sequence": nil, "usage": a.anthropicUsage()})
}

func (a answer) openaiFinish() string {
	if a.turn.Tool != nil {
		return "tool_calls"
	}
	return "stop"
}

func (a answer) openaiUsage() obj {
	in, out, cr, _ := a.turn.usage()
	return obj{"prompt_tokens": in + cr, "completion_tokens": out, "total_tokens": in + cr + out,
		"prompt_tokens_details": obj{"cached_tokens": cr}}
}

func (a answer) openaiToolCall() obj {
	return obj{"id": a.toolID("call"), "type": "function",
		"function": obj{"name": a.turn.Tool.Name, "arguments": a.toolInput()}}
}

func (a answer) openaiStream(w http.ResponseWriter, includeUsage bool) {
	s := newSSE(w)
	id := fmt.Sprintf("chatcmpl-fake-%d", a.seq)
	chunk := func(delta obj, finish any) obj {
		return obj{"id": id, "object": "chat.completion.chunk", "created": 0, "model": a.model,
			"choices": []any{obj{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	s.event("", chunk(obj{"role": "assistant", "content": ""}, nil))
	for _, c := range chunks(a.turn.Text, 24) {
		s.event("", chunk(obj{"content": c}, nil))
	}
	if a.turn.Tool != nil {
		args := chunks(a.toolInput(), 32)
		first := obj{"index": 0, "id": a.toolID("call"), "type": "function",
			"function": obj{"name": a.turn.Tool.Name, "arguments": ""}}
		s.event("", chunk(obj{"tool_calls": []any{first}}, nil))
		for _, c := range args {
			s.event("", chunk(obj{"tool_calls": []any{obj{"index": 0, "function": obj{"arguments": c}}}}, nil))
		}
	}
	s.event("", chunk(obj{}, a.openaiFinish()))
	if includeUsage {
		s.event("", obj{"id": id, "object": "chat.completion.chunk", "created": 0, "model": a.model,
			"choices": []any{}, "usage": a.openaiUsage()})
	}
	s.event("", "[DONE]")
}

func (a answer) openaiJSON(w http.ResponseWriter) {
	msg := obj{"role": "assistant", "content": a.turn.Text}
	if a.turn.Tool != nil {
		msg["tool_calls"] = []any{a.openaiToolCall()}
		if a.turn.Text == "" {
			msg["content"] = nil
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(obj{"id": fmt.Sprintf("chatcmpl-fake-%d", a.seq),
		"object": "chat.completion", "created": 0, "model": a.model,
		"choices": []any{obj{"index": 0, "message": msg, "finish_reason": a.openaiFinish()}},
		"usage":   a.openaiUsage()})
}
