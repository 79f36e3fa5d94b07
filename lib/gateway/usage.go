package gateway

import (
	"bytes"
	"encoding/json"
)

// Bounds of the usage reader: whatever a response's size, it holds at most
// one SSE line (longer lines are skipped: usage events are small) and a
// few captured JSON values.
const (
	maxSSELine    = 64 << 10
	maxCaptureVal = 16 << 10
)

// callUsage is what a model response said about itself.
type callUsage struct {
	Model                                string
	ID                                   string
	Input, Output, CacheRead, CacheWrite int64
	sawUsage                             bool
}

// usageReader extracts usage from a response body as its bytes pass
// (Write is fed every chunk the client is sent), in bounded memory. sse:
// text/event-stream; else the body is one JSON object.
type usageReader struct {
	style string
	sse   bool
	u     callUsage

	line     []byte
	skipLine bool // the current line passed maxSSELine

	js jsonTop
}

func newUsageReader(style string, sse bool) *usageReader {
	r := &usageReader{style: style, sse: sse}
	r.js.want = map[string]bool{"model": true, "id": true, "usage": true}
	return r
}

func (r *usageReader) Write(p []byte) (int, error) {
	n := len(p)
	if !r.sse {
		r.js.feed(p)
		return n, nil
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !r.skipLine {
			if len(r.line)+len(chunk) > maxSSELine {
				r.skipLine = true
				r.line = r.line[:0]
			} else {
				r.line = append(r.line, chunk...)
			}
		}
		if i < 0 {
			break
		}
		if !r.skipLine {
			r.sseLine(bytes.TrimSuffix(r.line, []byte("\r")))
		}
		r.line = r.line[:0]
		r.skipLine = false
		p = p[i+1:]
	}
	return n, nil
}

// result is the usage seen so far (a stream cut short keeps what it had).
func (r *usageReader) result() callUsage {
	if !r.sse {
		r.js.apply(r)
	} else if len(r.line) > 0 && !r.skipLine {
		r.sseLine(bytes.TrimSuffix(r.line, []byte("\r")))
		r.line = r.line[:0]
	}
	return r.u
}

// usageFields is the union of both styles' usage objects.
type usageFields struct {
	// Anthropic; OpenAI's Responses API uses input/output too.
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	// OpenAI chat completions.
	PromptTokens       *int64 `json:"prompt_tokens"`
	CompletionTokens   *int64 `json:"completion_tokens"`
	PromptTokenDetails *struct {
		CachedTokens *int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	InputTokenDetails *struct {
		CachedTokens *int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
}

// addUsage folds a usage object into u. Anthropic's input_tokens exclude
// cache reads and writes; OpenAI's include cached tokens, which are taken
// out here so input_tokens means the same for both (uncached input).
// Anthropic's message_delta usage is cumulative: later values replace
// earlier ones.
func (u *callUsage) addUsage(style string, f *usageFields) {
	if f == nil {
		return
	}
	set := func(dst *int64, v *int64) {
		if v != nil && *v >= 0 {
			*dst = *v
			u.sawUsage = true
		}
	}
	if style == StyleOpenAI {
		in, cached := f.PromptTokens, (*int64)(nil)
		if in == nil {
			in = f.InputTokens
		}
		if f.PromptTokenDetails != nil {
			cached = f.PromptTokenDetails.CachedTokens
		} else if f.InputTokenDetails != nil {
			cached = f.InputTokenDetails.CachedTokens
		}
		out := f.CompletionTokens
		if out == nil {
			out = f.OutputTokens
		}
		set(&u.Input, in)
		set(&u.Output, out)
		if cached != nil && *cached >= 0 {
			u.CacheRead = *cached
			if u.Input >= *cached {
				u.Input -= *cached
			}
		}
		return
	}
	set(&u.Input, f.InputTokens)
	set(&u.Output, f.OutputTokens)
	set(&u.CacheRead, f.CacheReadInputTokens)
	set(&u.CacheWrite, f.CacheCreationInputTokens)
}

// sseEvent is the part of a stream event the gateway reads: Anthropic's
// message_start (message.usage, .model, .id) and message_delta (usage);
// OpenAI's chat chunks (usage on the last, model, id) and Responses API
// events (response.usage).
type sseEvent struct {
	Type    string       `json:"type"`
	Model   string       `json:"model"`
	ID      string       `json:"id"`
	Usage   *usageFields `json:"usage"`
	Message *struct {
		Model string       `json:"model"`
		ID    string       `json:"id"`
		Usage *usageFields `json:"usage"`
	} `json:"message"`
	Response *struct {
		Model string       `json:"model"`
		ID    string       `json:"id"`
		Usage *usageFields `json:"usage"`
	} `json:"response"`
}

func (r *usageReader) sseLine(line []byte) {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return // [DONE], keep-alives
	}
	var ev sseEvent
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	u := &r.u
	setStr := func(dst *string, v string) {
		if v != "" && *dst == "" {
			*dst = clip(v, 200)
		}
	}
	if ev.Message != nil {
		setStr(&u.Model, ev.Message.Model)
		setStr(&u.ID, ev.Message.ID)
		u.addUsage(r.style, ev.Message.Usage)
	}
	if ev.Response != nil {
		setStr(&u.Model, ev.Response.Model)
		setStr(&u.ID, ev.Response.ID)
		u.addUsage(r.style, ev.Response.Usage)
	}
	setStr(&u.Model, ev.Model)
	setStr(&u.ID, ev.ID)
	u.addUsage(r.style, ev.Usage)
}

// apply reads the captured top-level values of a JSON body.
func (j *jsonTop) apply(r *usageReader) {
	if j.applied {
		return
	}
	j.applied = true
	var s string
	if v, ok := j.got["model"]; ok && json.Unmarshal(v, &s) == nil {
		r.u.Model = clip(s, 200)
	}
	if v, ok := j.got["id"]; ok && json.Unmarshal(v, &s) == nil {
		r.u.ID = clip(s, 200)
	}
	if v, ok := j.got["usage"]; ok {
		var f usageFields
		if json.Unmarshal(v, &f) == nil {
			r.u.addUsage(r.style, &f)
		}
	}
}

// jsonTop is a streaming scanner of one JSON object that captures the raw
// values of a few top-level keys (each at most maxCaptureVal bytes) and
// skips everything else without holding it: a response's content may be
// megabytes, its usage a few dozen bytes after it.
type jsonTop struct {
	want    map[string]bool
	got     map[string][]byte
	applied bool

	depth   int  // nesting depth; 1 = inside the top-level object
	inStr   bool // inside a string
	esc     bool // after a backslash in a string
	expect  int  // at depth 1: 0 = a key is next, 1 = the value is next
	key     []byte
	inKey   bool
	capture bool // capturing the current top-level value
	val     []byte
	dead    bool
}

func (j *jsonTop) feed(p []byte) {
	if j.dead {
		return
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if j.capture {
			if len(j.val) >= maxCaptureVal {
				j.capture = false
				j.val = nil
			} else {
				j.val = append(j.val, c)
			}
		}
		if j.inStr {
			if j.inKey && !j.esc && c != '"' && len(j.key) < 64 {
				j.key = append(j.key, c)
			}
			switch {
			case j.esc:
				j.esc = false
			case c == '\\':
				j.esc = true
			case c == '"':
				j.inStr = false
				if j.inKey {
					j.inKey = false
				} else if j.capture && j.depth == 1 {
					j.endValue()
				}
			}
			continue
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '"':
			j.inStr = true
			if j.depth == 1 && j.expect == 0 {
				j.inKey = true
				j.key = j.key[:0]
				continue
			}
			if j.depth == 1 && j.expect == 1 {
				j.startValue(c)
			}
		case ':':
			if j.depth == 1 {
				j.expect = 1
			}
		case ',':
			if j.depth == 1 {
				if j.capture {
					j.val = j.val[:len(j.val)-1] // the comma
					j.endValue()
				}
				j.expect = 0
			}
		case '{', '[':
			if j.depth == 1 && j.expect == 1 {
				j.startValue(c)
			}
			j.depth++
		case '}', ']':
			j.depth--
			if j.depth == 1 && j.capture {
				j.endValue()
			} else if j.depth == 0 && j.capture {
				j.val = j.val[:len(j.val)-1] // the closing brace
				j.endValue()
			}
			if j.depth < 0 {
				j.dead = true
				return
			}
		default:
			if j.depth == 1 && j.expect == 1 && !j.capture {
				j.startValue(c) // a number, true, false, null
			}
		}
	}
}

func (j *jsonTop) startValue(c byte) {
	j.expect = 2 // the value has begun; a comma ends it
	if j.want[string(j.key)] {
		if j.got == nil {
			j.got = map[string][]byte{}
		}
		if _, dup := j.got[string(j.key)]; !dup {
			j.capture = true
			j.val = append(j.val[:0], c)
		}
	}
}

func (j *jsonTop) endValue() {
	if j.capture {
		j.got[string(j.key)] = bytes.Clone(j.val)
	}
	j.capture = false
	j.val = j.val[:0]
}
