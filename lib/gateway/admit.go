package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/roster-sh/roster/lib/creds"
	"github.com/roster-sh/roster/lib/runs"
)

// MaxModelBody bounds a model request's body: it is read whole before it
// goes up (its model, max_tokens and stream flags decide admission).
const MaxModelBody = 32 << 20

// DefaultMaxTokens is a call's output reservation when its request names
// no max_tokens (docs/gateway.md, "Budget counts what is in flight").
const DefaultMaxTokens = 8192

// DefaultInflight is Config.Inflight's default: model calls of one run at
// once; more wait.
const DefaultInflight = 8

// modelRequest is what admission reads of a model request's body.
type modelRequest struct {
	body      []byte
	model     string
	maxTokens int64 // max_tokens, max_output_tokens or max_completion_tokens (0 = none)
	stream    bool
	// hasOptions: stream_options is given; includeUsage: it asks for usage.
	hasOptions, includeUsage bool
	// infer: an inference call (a POST that is not count_tokens): it
	// reserves, is estimated when its usage is missing, and needs a price
	// under a money budget.
	infer bool
}

// inference tells the calls that spend tokens from those that do not
// (model lists, count_tokens).
func inference(method, rest string) bool {
	return method == http.MethodPost && !strings.HasSuffix(rest, "/count_tokens")
}

// setBody puts the body read back on r (rewritten, perhaps: its length
// told anew).
func (mr *modelRequest) setBody(r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(mr.body))
	r.ContentLength = int64(len(mr.body))
	r.Header.Set("Content-Length", strconv.Itoa(len(mr.body)))
	r.Header.Del("Transfer-Encoding")
	r.TransferEncoding = nil
}

// takeTurn holds one of the run's Config.Inflight slots and, for an
// inference call under a budget, its reservation; release gives both
// back (after the call's usage is accounted). why is a budget refusal;
// a nil release with no why: the box went away while the call waited.
func (g *Gateway) takeTurn(ctx context.Context, mr *modelRequest, price Price, priced bool) (release func(), why string) {
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ""
	}
	if !mr.infer || g.cfg.Budget == nil {
		return func() { <-g.slots }, ""
	}
	res := reserve(mr, price, priced)
	why, err := g.admitSpend(ctx, res)
	if why != "" || err != nil {
		<-g.slots
		return nil, why
	}
	return func() { g.settle(res); <-g.slots }, ""
}

// The top-level keys a request's scanner captures.
const (
	reqModel = iota
	reqMaxTokens
	reqMaxOutput
	reqMaxCompletion
	reqStream
	reqStreamOptions
)

func requestKey(key []byte) int {
	switch string(key) {
	case "model":
		return reqModel
	case "max_tokens":
		return reqMaxTokens
	case "max_output_tokens":
		return reqMaxOutput
	case "max_completion_tokens":
		return reqMaxCompletion
	case "stream":
		return reqStream
	case "stream_options":
		return reqStreamOptions
	}
	return -1
}

// errAmbiguous is a request whose top-level keys could be read two ways:
// a key given twice, or spelled with an escape (the upstream's parser
// might take the other value than the gateway's).
var errAmbiguous = errors.New("a top-level key given twice or spelled with an escape")

// readModelRequest reads r's body (at most MaxModelBody) and what
// admission needs of it. A body that is not a JSON object reads as no
// model and no max_tokens: the upstream refuses it, and under a money
// budget it is model_unpriced.
func readModelRequest(r *http.Request) (*modelRequest, error) {
	mr := &modelRequest{}
	if r.Body == nil || r.Body == http.NoBody {
		return mr, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxModelBody+1))
	if err != nil {
		return nil, err
	}
	if len(body) > MaxModelBody {
		return nil, errTooLarge
	}
	mr.body = body
	var j jsonTop
	j.capture = -1
	j.val, j.kept = j.valBuf[:0], j.keptBuf[:0]
	j.pick = requestKey
	j.feed(body)
	if j.dup || j.escKey {
		return nil, errAmbiguous
	}
	if v, ok := j.value(reqModel); ok {
		if s, ok := decodeString(v); ok {
			mr.model = clip(s, 200)
		}
	}
	for _, k := range []int{reqMaxTokens, reqMaxOutput, reqMaxCompletion} {
		if v, ok := j.value(k); ok && mr.maxTokens == 0 {
			mr.maxTokens, _ = strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		}
	}
	if v, ok := j.value(reqStream); ok {
		mr.stream = string(bytes.TrimSpace(v)) == "true"
	}
	if v, ok := j.value(reqStreamOptions); ok {
		mr.hasOptions = true
		var o struct {
			IncludeUsage bool `json:"include_usage"`
		}
		mr.includeUsage = json.Unmarshal(v, &o) == nil && o.IncludeUsage
	}
	return mr, nil
}

var errTooLarge = errors.New("a model request over 32 MiB")

// wantsUsageOption tells an OpenAI chat-completions stream that does not
// ask for its usage: without stream_options.include_usage the upstream
// sends none, and the call would count zero tokens.
func (mr *modelRequest) wantsUsageOption(p creds.Provider, rest string) bool {
	return p.Style == creds.StyleOpenAI && mr.stream && !mr.includeUsage && strings.HasSuffix(rest, "/chat/completions")
}

// withUsageOption returns the body with stream_options.include_usage set
// true (the one body rewrite the gateway makes).
func (mr *modelRequest) withUsageOption() []byte {
	b := mr.body
	if !mr.hasOptions {
		i := bytes.IndexByte(b, '{')
		if i < 0 {
			return b
		}
		out := make([]byte, 0, len(b)+40)
		out = append(out, b[:i+1]...)
		out = append(out, `"stream_options":{"include_usage":true}`...)
		if rest := bytes.TrimSpace(b[i+1:]); len(rest) > 0 && rest[0] != '}' {
			out = append(out, ',')
		}
		return append(out, b[i+1:]...)
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return b
	}
	var opts map[string]json.RawMessage
	if json.Unmarshal(top["stream_options"], &opts) != nil || opts == nil {
		opts = map[string]json.RawMessage{}
	}
	opts["include_usage"] = json.RawMessage("true")
	top["stream_options"], _ = json.Marshal(opts)
	out, err := json.Marshal(top)
	if err != nil {
		return b
	}
	return out
}

// reservation is what a call holds against the budget while in flight:
// its output bound and its input estimate (request bytes / 3).
type reservation struct {
	tokens int64
	usd    float64
}

func reserve(mr *modelRequest, price Price, priced bool) reservation {
	out := mr.maxTokens
	if out <= 0 {
		out = DefaultMaxTokens
	}
	in := int64(len(mr.body)) / 3
	res := reservation{tokens: in + out}
	if priced {
		res.usd = (float64(in)*price.Input + float64(out)*price.Output) / 1e6
	}
	return res
}

// admitSpend waits for a model call's turn under the budget: it is admitted
// when the day's spend plus what calls still in flight reserved stays
// under the budget (a call alone in flight is admitted while the spend
// is), else it waits for one to settle; the spend itself reaching the
// budget is budget_spent. It returns "" and holds res, or why not.
func (g *Gateway) admitSpend(ctx context.Context, res reservation) (string, error) {
	b := g.cfg.Budget
	if b == nil {
		return "", nil
	}
	for {
		g.mu.Lock()
		tokens, usd := g.spentLocked()
		if why := spentWhy(b, tokens, usd); why != "" {
			g.mu.Unlock()
			return why, nil
		}
		over := b.Tokens > 0 && tokens+g.reserved.tokens >= b.Tokens || b.USD > 0 && usd+g.reserved.usd >= b.USD
		if !over || g.holding == 0 {
			g.reserved.tokens += res.tokens
			g.reserved.usd += res.usd
			g.holding++
			g.mu.Unlock()
			return "", nil
		}
		wake := g.settled
		g.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// settle ends res's hold (the call's real usage was accounted) and wakes
// the calls waiting for a turn.
func (g *Gateway) settle(res reservation) {
	if g.cfg.Budget == nil {
		return
	}
	g.mu.Lock()
	g.reserved.tokens -= res.tokens
	g.reserved.usd -= res.usd
	g.holding--
	close(g.settled)
	g.settled = make(chan struct{})
	g.mu.Unlock()
}

// spentWhy says why the budget refuses a call at this spend, or "".
func spentWhy(b *Budget, tokens int64, usd float64) string {
	if b.Tokens > 0 && tokens >= b.Tokens {
		return "the worker has used " + strconv.FormatInt(tokens, 10) + " of its " + strconv.FormatInt(b.Tokens, 10) + " proactive tokens today"
	}
	if b.USD > 0 && usd >= b.USD {
		return "the worker has spent $" + strconv.FormatFloat(usd, 'f', 2, 64) + " of its $" + strconv.FormatFloat(b.USD, 'f', 2, 64) + " proactive budget today"
	}
	return ""
}

// estimate is a call's usage when the upstream told none (the client
// aborted, the stream broke, the provider omitted it): input from the
// request's size, output from the bytes received, each as at least what
// the answer did say.
func estimate(u *callUsage, reqBytes, downBytes int64) {
	if in := reqBytes / 3; in > u.Input {
		u.Input = in
	}
	if out := downBytes / 4; out > u.Output {
		u.Output = out
	}
}

// usageBearing tells an answer usage may be read from: a 2xx of a model
// endpoint with a JSON or event-stream body (a 404 page echoing the
// request counts nothing).
func usageBearing(status int, contentType string) bool {
	if status < 200 || status > 299 {
		return false
	}
	if isEventStream(contentType) {
		return true
	}
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// refusalFor maps admission's errors to a refusal.
func refusalFor(err error) (string, string) {
	switch {
	case errors.Is(err, errTooLarge):
		return runs.RefuseBadRequest, "a model request over 32 MiB"
	case errors.Is(err, errAmbiguous):
		return runs.RefuseBadRequest, errAmbiguous.Error()
	}
	return runs.RefuseBadRequest, "the request body could not be read"
}
