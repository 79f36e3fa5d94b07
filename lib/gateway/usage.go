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

// The top-level keys a JSON body's scanner captures.
const (
	capModel = iota
	capID
	capUsage
	capKeys = 6 // room for a request's keys too (admit.go)
)

func captureKey(key []byte) int {
	switch string(key) {
	case "model":
		return capModel
	case "id":
		return capID
	case "usage":
		return capUsage
	}
	return -1
}

// jsonTop is a streaming scanner of one JSON object that captures the raw
// values of a few top-level keys (each at most maxCaptureVal bytes) and
// skips everything else without holding it: a response's content may be
// megabytes, its usage a few dozen bytes after it.
type jsonTop struct {
	kept    []byte          // the captured values, one after another
	span    [capKeys][2]int // each captured value's place in kept
	got     [capKeys]bool
	applied bool
	// pick names the keys captured (nil: captureKey, a response's); dup:
	// a captured key came twice; escKey: a top-level key held an escape.
	pick   func(key []byte) int
	dup    bool
	escKey bool

	depth   int  // nesting depth; 1 = inside the top-level object
	inStr   bool // inside a string
	esc     bool // after a backslash in a string
	expect  int  // at depth 1: 0 = a key is next, 1 = the value is next
	key     [64]byte
	keyLen  int
	inKey   bool
	capture int // the captured key of the current top-level value, or -1
	val     []byte
	dead    bool

	// the first bytes of val and kept: a small answer's capture costs
	// no allocation
	valBuf  [256]byte
	keptBuf [512]byte
}

// value is the raw text captured for key k.
func (j *jsonTop) value(k int) ([]byte, bool) {
	if !j.got[k] {
		return nil, false
	}
	return j.kept[j.span[k][0]:j.span[k][1]], true
}

func (j *jsonTop) feed(p []byte) {
	if j.dead {
		return
	}
	for i := 0; i < len(p); i++ {
		if j.inStr && !j.esc && !j.inKey && j.capture < 0 {
			// inside a string nobody reads (content, often most of
			// the body): on to its next quote or backslash in a tight
			// loop
			for i < len(p) && p[i] != '"' && p[i] != '\\' {
				i++
			}
			if i == len(p) {
				return
			}
		}
		c := p[i]
		if j.capture >= 0 {
			if len(j.val) >= maxCaptureVal {
				j.capture = -1
				j.val = j.val[:0]
			} else {
				j.val = append(j.val, c)
			}
		}
		if j.inStr {
			if j.inKey && c == '\\' && j.depth == 1 {
				j.escKey = true
			}
			if j.inKey && !j.esc && c != '"' && j.keyLen < len(j.key) {
				j.key[j.keyLen] = c
				j.keyLen++
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
				} else if j.capture >= 0 && j.depth == 1 {
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
				j.keyLen = 0
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
				if j.capture >= 0 {
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
			if j.depth == 1 && j.capture >= 0 {
				j.endValue()
			} else if j.depth == 0 && j.capture >= 0 {
				j.val = j.val[:len(j.val)-1] // the closing brace
				j.endValue()
			}
			if j.depth < 0 {
				j.dead = true
				return
			}
		default:
			if j.depth == 1 && j.expect == 1 && j.capture < 0 {
				j.startValue(c) // a number, true, false, null
			}
		}
	}
}

func (j *jsonTop) startValue(c byte) {
	j.expect = 2 // the value has begun; a comma ends it
	pick := j.pick
	if pick == nil {
		pick = captureKey
	}
	k := pick(j.key[:j.keyLen])
	if k >= 0 && (j.got[k] || j.capture == k) {
		j.dup = true
	}
	if k >= 0 && !j.got[k] {
		j.capture = k
		j.val = append(j.val[:0], c)
	}
}

func (j *jsonTop) endValue() {
	if k := j.capture; k >= 0 {
		j.span[k] = [2]int{len(j.kept), len(j.kept) + len(j.val)}
		j.kept = append(j.kept, j.val...)
		j.got[k] = true
	}
	j.capture = -1
	j.val = j.val[:0]
}

// decodeString decodes a captured JSON string as json.Unmarshal would; a
// plain string (printable ASCII, no escapes), which model names and ids
// are, is read without it.
func decodeString(v []byte) (string, bool) {
	t := bytes.TrimRight(v, " \t\r\n")
	if len(t) >= 2 && t[0] == '"' && t[len(t)-1] == '"' {
		plain := true
		for _, c := range t[1 : len(t)-1] {
			if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
				plain = false
				break
			}
		}
		if plain {
			return string(t[1 : len(t)-1]), true
		}
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// decodeUsage decodes a captured usage object into f and reports whether
// json.Unmarshal into usageJSON would have succeeded, with the same
// result. The objects upstreams send (integer counts, flat *_details
// objects, plain strings such as service_tier) are read by a small
// scanner without allocating; anything else it does not know for sure
// (a float, an escape, an array, a key in capitals that encoding/json
// would match regardless of case) goes to json.Unmarshal itself.
func decodeUsage(v []byte, f *usageFields) bool {
	var fast usageFields
	if s := (usageScan{b: v}); s.object(&fast) {
		*f = fast
		return true
	}
	var j usageJSON
	if json.Unmarshal(v, &j) != nil {
		return false
	}
	*f = j.fields()
	return true
}

// usageScan is decodeUsage's scanner; every method returns false for
// input it does not handle (then json.Unmarshal decides).
type usageScan struct {
	b []byte
	i int
}

func (s *usageScan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

func (s *usageScan) eat(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// object reads the whole input as a usage object into f.
func (s *usageScan) object(f *usageFields) bool {
	ok := s.members(func(key []byte) bool {
		var dst *optInt
		var det *optDetails
		switch string(key) {
		case "input_tokens":
			dst = &f.in
		case "output_tokens":
			dst = &f.out
		case "cache_read_input_tokens":
			dst = &f.cacheRead
		case "cache_creation_input_tokens":
			dst = &f.cacheWrite
		case "prompt_tokens":
			dst = &f.prompt
		case "completion_tokens":
			dst = &f.completion
		case "prompt_tokens_details":
			det = &f.promptDetails
		case "input_tokens_details":
			det = &f.inputDetails
		default:
			return s.skip(2)
		}
		if dst != nil {
			return s.intOrNull(dst)
		}
		if s.null() {
			*det = optDetails{} // null sets the pointer to nil
			return true
		}
		// a repeated object decodes into the one before, as encoding/json does
		det.ok = true
		return s.members(func(key []byte) bool {
			if string(key) == "cached_tokens" {
				return s.intOrNull(&det.cached)
			}
			return s.skip(1)
		})
	})
	s.ws()
	return ok && s.i == len(s.b)
}

// members reads an object, calling member for each key with the scanner
// at its value.
func (s *usageScan) members(member func(key []byte) bool) bool {
	if !s.eat('{') {
		return false
	}
	if s.eat('}') {
		return true
	}
	for {
		key, ok := s.key()
		if !ok || !s.eat(':') {
			return false
		}
		s.ws()
		if !member(key) {
			return false
		}
		if s.eat('}') {
			return true
		}
		if !s.eat(',') {
			return false
		}
	}
}

// key reads a key of lower-case letters, digits and underscores (which
// encoding/json matches exactly).
func (s *usageScan) key() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '_':
		default:
			return nil, false
		}
	}
	return nil, false
}

func (s *usageScan) null() bool {
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// intOrNull reads an integer of at most 18 digits (it fits an int64) or
// null into dst.
func (s *usageScan) intOrNull(dst *optInt) bool {
	if s.null() {
		*dst = optInt{}
		return true
	}
	n, ok := s.integer()
	if ok {
		*dst = optInt{n, true}
	}
	return ok
}

func (s *usageScan) integer() (int64, bool) {
	neg := s.i < len(s.b) && s.b[s.i] == '-'
	if neg {
		s.i++
	}
	start := s.i
	var n int64
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		n = n*10 + int64(s.b[s.i]-'0')
		s.i++
	}
	digits := s.i - start
	if digits == 0 || digits > 18 || digits > 1 && s.b[start] == '0' {
		return 0, false
	}
	if s.i < len(s.b) {
		switch s.b[s.i] { // a fraction or an exponent: not an int64
		case '.', 'e', 'E':
			return 0, false
		}
	}
	if neg {
		n = -n
	}
	return n, true
}

// skip passes over a value of a field nobody reads: an integer, a plain
// string, true, false, null, or (depth > 0) an object of such values.
func (s *usageScan) skip(depth int) bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		for s.i++; s.i < len(s.b); s.i++ {
			switch c := s.b[s.i]; {
			case c == '"':
				s.i++
				return true
			case c < 0x20 || c == '\\':
				return false
			}
		}
		return false
	case c == '-' || '0' <= c && c <= '9':
		_, ok := s.integer()
		return ok
	case c == '{':
		return depth > 0 && s.members(func([]byte) bool { return s.skip(depth - 1) })
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
			s.i += len(lit)
			return true
		}
	}
	return false
}
