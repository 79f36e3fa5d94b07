package gateway

import (
	"bytes"
	"encoding/json"

	"github.com/roster-sh/roster/lib/creds"
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
	// final: the usage that ends the answer was seen (Anthropic's stream
	// tells input first, output at its message_delta).
	final bool
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
	r := &usageReader{}
	r.init(style, sse)
	return r
}

func (r *usageReader) init(style string, sse bool) {
	*r = usageReader{style: style, sse: sse}
	r.js.capture = -1
	r.js.val, r.js.kept = r.js.valBuf[:0], r.js.keptBuf[:0]
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

// usageJSON is the union of both styles' usage objects, as
// encoding/json decodes it.
type usageJSON struct {
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

// usageFields is a usage object's fields: what usageJSON says, without
// pointers (so that decodeUsage needs no allocation).
type usageFields struct {
	in, out, cacheRead, cacheWrite, prompt, completion optInt
	promptDetails, inputDetails                        optDetails
}

// optInt is a number that may be absent (or null).
type optInt struct {
	v  int64
	ok bool
}

// optDetails is a *_tokens_details object that may be absent (or null).
type optDetails struct {
	ok     bool
	cached optInt
}

func optOf(p *int64) optInt {
	if p == nil {
		return optInt{}
	}
	return optInt{*p, true}
}

func (j *usageJSON) fields() usageFields {
	f := usageFields{in: optOf(j.InputTokens), out: optOf(j.OutputTokens), cacheRead: optOf(j.CacheReadInputTokens),
		cacheWrite: optOf(j.CacheCreationInputTokens), prompt: optOf(j.PromptTokens), completion: optOf(j.CompletionTokens)}
	if d := j.PromptTokenDetails; d != nil {
		f.promptDetails = optDetails{ok: true, cached: optOf(d.CachedTokens)}
	}
	if d := j.InputTokenDetails; d != nil {
		f.inputDetails = optDetails{ok: true, cached: optOf(d.CachedTokens)}
	}
	return f
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
	set := func(dst *int64, v optInt) {
		if v.ok && v.v >= 0 {
			*dst = v.v
			u.sawUsage = true
		}
	}
	if style == creds.StyleOpenAI {
		in, cached := f.prompt, optInt{}
		if !in.ok {
			in = f.in
		}
		if f.promptDetails.ok {
			cached = f.promptDetails.cached
		} else if f.inputDetails.ok {
			cached = f.inputDetails.cached
		}
		out := f.completion
		if !out.ok {
			out = f.out
		}
		set(&u.Input, in)
		set(&u.Output, out)
		if cached.ok && cached.v >= 0 {
			u.CacheRead = cached.v
			if u.Input >= cached.v {
				u.Input -= cached.v
			}
		}
		return
	}
	set(&u.Input, f.in)
	set(&u.Output, f.out)
	set(&u.CacheRead, f.cacheRead)
	set(&u.CacheWrite, f.cacheWrite)
}

// sseEvent is the part of a stream event the gateway reads: Anthropic's
// message_start (message.usage, .model, .id) and message_delta (usage);
// OpenAI's chat chunks (usage on the last, model, id) and Responses API
// events (response.usage).
type sseEvent struct {
	Type    string     `json:"type"`
	Model   string     `json:"model"`
	ID      string     `json:"id"`
	Usage   *usageJSON `json:"usage"`
	Message *struct {
		Model string     `json:"model"`
		ID    string     `json:"id"`
		Usage *usageJSON `json:"usage"`
	} `json:"message"`
	Response *struct {
		Model string     `json:"model"`
		ID    string     `json:"id"`
		Usage *usageJSON `json:"usage"`
	} `json:"response"`
}

func (j *usageJSON) fieldsOrNil() *usageFields {
	if j == nil {
		return nil
	}
	f := j.fields()
	return &f
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
		u.addUsage(r.style, ev.Message.Usage.fieldsOrNil())
	}
	if ev.Response != nil {
		setStr(&u.Model, ev.Response.Model)
		setStr(&u.ID, ev.Response.ID)
		u.addUsage(r.style, ev.Response.Usage.fieldsOrNil())
	}
	setStr(&u.Model, ev.Model)
	setStr(&u.ID, ev.ID)
	u.addUsage(r.style, ev.Usage.fieldsOrNil())
	if u.sawUsage && (r.style != creds.StyleAnthropic || ev.Type == "message_delta" && ev.Usage != nil) {
		u.final = true
	}
}

// apply reads the captured top-level values of a JSON body.
func (j *jsonTop) apply(r *usageReader) {
	if j.applied {
		return
	}
	j.applied = true
	if v, ok := j.value(capModel); ok {
		if s, ok := decodeString(v); ok {
			r.u.Model = clip(s, 200)
		}
	}
	if v, ok := j.value(capID); ok {
		if s, ok := decodeString(v); ok {
			r.u.ID = clip(s, 200)
		}
	}
	if v, ok := j.value(capUsage); ok {
		var f usageFields
		if decodeUsage(v, &f) {
			r.u.addUsage(r.style, &f)
			r.u.final = r.u.sawUsage
		}
	}
}
