package fakemodel

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
)

// Turn is one scripted answer.
type Turn struct {
	// Text is the answer's text (before its tool call, when it has one).
	Text string `json:"text,omitempty"`
	// Tool, when set, makes the answer a tool call (stop reason tool_use).
	Tool *ToolCall `json:"tool,omitempty"`
	// Status, when not 0 or 200, answers this HTTP status with an error in
	// the provider's shape instead (401: an authentication error).
	Status int `json:"status,omitempty"`
	// Usage reported for the answer; zero fields take the defaults.
	InputTokens  int64 `json:"input_tokens,omitempty"`
	OutputTokens int64 `json:"output_tokens,omitempty"`
	CacheRead    int64 `json:"cache_read_tokens,omitempty"`
	CacheWrite   int64 `json:"cache_write_tokens,omitempty"`
}

// ToolCall is a scripted tool use: the tool's name ("bash") and its input
// object ({"command":"..."}).
type ToolCall struct {
	Name  string         `json:"name"`
	Input map[string]any `json:"input"`
}

// Script is the list of turns a conversation goes through.
type Script struct {
	Turns []Turn `json:"turns"`
}

// Default usage of an answer whose turn leaves it zero.
const (
	DefaultInputTokens  = 120
	DefaultOutputTokens = 30
)

// ParseScript decodes a script file's JSON ({"turns":[...]}), refusing
// unknown fields so a typo is not a silently empty turn.
func ParseScript(data []byte) (Script, error) {
	var s Script
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Script{}, fmt.Errorf("fakemodel script: %w", err)
	}
	for i, t := range s.Turns {
		if t.Tool != nil && t.Tool.Name == "" {
			return Script{}, fmt.Errorf("fakemodel script: turn %d: tool without a name", i+1)
		}
		if t.Status != 0 && (t.Status < 100 || t.Status > 599) {
			return Script{}, fmt.Errorf("fakemodel script: turn %d: status %d", i+1, t.Status)
		}
	}
	return s, nil
}

// Call is one request as the server saw it.
type Call struct {
	Provider string `json:"provider"` // "anthropic" or "openai"
	Path     string `json:"path"`
	Key      string `json:"key"` // the credential it carried (x-api-key or Bearer)
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Script   string `json:"script,omitempty"` // the named script followed ("" = the default)
	Turn     int    `json:"turn"`             // the script turn answered (0-based)
	Status   int    `json:"status"`           // the status answered
	// LastUser is the text of the request's last user message (a tool
	// result's content included), its first 4 KiB.
	LastUser string `json:"last_user,omitempty"`
	// Usage answered (zero for an error answer).
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	CacheRead    int64 `json:"cache_read_tokens"`
	CacheWrite   int64 `json:"cache_write_tokens"`
}

// Server is the scripted model server; it is an http.Handler.
type Server struct {
	key    string
	script Script

	// OnCall, when set before serving, is called with each call as it is
	// recorded, one at a time, in arrival order.
	OnCall func(Call)

	mu    sync.Mutex
	calls []Call
	named map[string]Script // Name's scripts
}

// New returns a server that expects key on every call and answers from
// script.
func New(key string, script Script) *Server {
	return &Server{key: key, script: script}
}

// Calls returns a copy of every call recorded so far, in arrival order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

func (s *Server) record(c Call) {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	if s.OnCall != nil {
		s.OnCall(c)
	}
	s.mu.Unlock()
}

// Listen listens on addr, which must be a loopback address
// ("127.0.0.1:0" for any free port): the fake model is never reachable
// from beyond the machine.
func Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("fakemodel: listen address %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("fakemodel: listen address %q is not a loopback IP (127.0.0.1, ::1)", addr)
	}
	return net.Listen("tcp", addr)
}

// maxBody bounds a request body read.
const maxBody = 32 << 20

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var provider string
	switch r.URL.Path {
	case "/v1/messages":
		provider = "anthropic"
	case "/v1/chat/completions", "/chat/completions":
		provider = "openai"
	default:
		http.Error(w, "fakemodel: no such route "+r.URL.Path, http.StatusNotFound)
		return
	}
	c := Call{Provider: provider, Path: r.URL.Path, Key: keyOf(r)}
	if r.Method != http.MethodPost {
		c.Status = http.StatusMethodNotAllowed
		s.record(c)
		writeError(w, provider, c.Status, "method not allowed")
		return
	}
	var req request
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&req); err != nil {
		c.Status = http.StatusBadRequest
		s.record(c)
		writeError(w, provider, c.Status, "bad request body: "+err.Error())
		return
	}
	c.Model, c.Stream = req.Model, req.Stream
	c.Turn = req.assistantTurns()
	c.LastUser = req.lastUser()
	if c.Key != s.key {
		c.Status = http.StatusUnauthorized
		s.record(c)
		writeError(w, provider, c.Status, "invalid x-api-key")
		return
	}
	var script Script
	c.Script, script = s.pick(&req)
	t := script.turn(c.Turn)
	if t.Status != 0 && t.Status != http.StatusOK {
		c.Status = t.Status
		s.record(c)
		writeError(w, provider, c.Status, "scripted error")
		return
	}
	c.Status = http.StatusOK
	c.InputTokens, c.OutputTokens, c.CacheRead, c.CacheWrite = t.usage()
	s.record(c)
	a := answer{turn: t, seq: c.Turn + 1, model: req.Model}
	switch {
	case provider == "anthropic" && req.Stream:
		a.anthropicStream(w)
	case provider == "anthropic":
		a.anthropicJSON(w)
	case req.Stream:
		a.openaiStream(w, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
	default:
		a.openaiJSON(w)
	}
}

func (sc Script) turn(i int) Turn {
	if i < len(sc.Turns) {
		return sc.Turns[i]
	}
	return Turn{Text: fmt.Sprintf("fakemodel: the script has no turn %d", i+1)}
}

func (t Turn) usage() (in, out, cr, cw int64) {
	in, out, cr, cw = t.InputTokens, t.OutputTokens, t.CacheRead, t.CacheWrite
	if in == 0 {
		in = DefaultInputTokens
	}
	if out == 0 {
		out = DefaultOutputTokens
	}
	return in, out, cr, cw
}

// keyOf is the credential a request carries: x-api-key, else a Bearer token.
func keyOf(r *http.Request) string {
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return k
	}
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return a[7:]
	}
	return ""
}

// writeError answers status with a body in the provider's error shape.
func writeError(w http.ResponseWriter, provider string, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	var body any
	if provider == "openai" {
		code := "fake_error"
		if status == http.StatusUnauthorized {
			code = "invalid_api_key"
		}
		body = map[string]any{"error": map[string]any{
			"message": "fakemodel: " + msg, "type": "invalid_request_error", "param": nil, "code": code}}
	} else {
		body = map[string]any{"type": "error", "error": map[string]any{
			"type": anthropicErrorType(status), "message": "fakemodel: " + msg}}
	}
	_ = json.NewEncoder(w).Encode(body)
}

func anthropicErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}
