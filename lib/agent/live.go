package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// The live session (docs/agents.md, "Streaming mode"; docs/channels.md):
// the agent runs once in its streaming mode and takes one chat message per
// turn on its standard input; its standard output is read by Turns for
// each turn's end and final text (the reply).
//
// The protocols, as verified against pi 0.73.1 and Claude Code 2.1.197
// (testdata/live-*.jsonl are their real output):
//
//   - pi: `pi --mode rpc`. A message is the command line
//     {"type":"prompt","message":TEXT}. pi answers it with
//     {"type":"response","command":"prompt","success":true}, then runs the
//     turn: agent_start, its own turn_start/message_*/tool_execution_*/
//     turn_end events, and one agent_end, which ends the turn. The final
//     text is that of the last assistant message_end before it (its
//     errorMessage, when its stopReason is "error" or "aborted", is the
//     turn's error). A prompt pi refuses (one while a turn runs and no
//     streamingBehavior was given; no model or key) gets
//     {"type":"response","command":"prompt","success":false,"error":...}
//     and no agent_end: that response ends the turn, failed. pi exits at
//     once when its standard input ends, a turn in flight included (no
//     agent_end then).
//   - Claude Code: `claude -p --input-format stream-json --output-format
//     stream-json --verbose`. A message is the line
//     {"type":"user","message":{"role":"user","content":[{"type":"text",
//     "text":TEXT}]}}; a line Claude Code cannot parse ends the process.
//     Each turn's events close with one "result" line, which ends the turn:
//     its "result" is the final text; is_error or a subtype other than
//     "success" makes it failed (its "errors", else its result text, say
//     why). Claude Code finishes the turn in flight when its input ends,
//     then exits.
//   - A plain command (no agent) gets PlainMessage's line per message and
//     ends a turn by printing the line {"type":"turn_end"}, optionally with
//     "text" (its reply) and "error" (the turn failed, and why).
//
// The caller sends the next message only after the turn ended: a message
// sent sooner is not reliably a turn of its own (all seen, recorded in
// testdata/). pi refuses a prompt that comes while it streams (no
// streamingBehavior is sent): Turns reports the refusal as a failed turn
// end, ahead of the turn in flight's own; and a prompt that comes before
// pi started the run of the one before (two written at once) is accepted
// and never reaches the model, with no turn end. Claude Code folds a
// message that comes mid-turn into the turn in flight ("The user sent a
// new message while you were working: ...", one result for both) or runs
// it as a turn of its own after, depending on when it comes.

// PrepareLive plans a live session of a: like Prepare, but the agent runs
// once in its streaming mode and takes messages on stdin (Message).
//
// in.Briefing (or the file in.BriefingPath) is the session's standing
// briefing, given as an addition to the agent's system prompt rather than
// as a first message: a first message would be a turn of its own (a model
// call and a reply nobody asked for) that the first chat message would
// have to wait behind, and that would shift every turn after it; in the
// system prompt the briefing costs no turn, never ends one, and is never
// compacted away in a long session. The briefing's own framing keeps the
// channel's log it quotes untrusted there as anywhere. pi is given the
// file when there is one (it reads a path it finds), Claude Code the text
// when it fits one argument, else the file. in.Interactive is ignored: a
// live session has no terminal.
func (a *Agent) PrepareLive(in Input) (*Plan, error) {
	if in.BaseURL == "" || in.Key == "" && in.KeyEnv == "" {
		return nil, fmt.Errorf("agent %s: no model route or key", a.Name)
	}
	// The interactive plan is the command line without a prompt; the live
	// session has no terminal, its mode flags and the briefing go in here.
	base := in
	base.Interactive, base.Briefing, base.BriefingPath, base.Args = true, "", "", nil
	var (
		p    *Plan
		err  error
		mode []string
		sys  []string
	)
	switch a.Name {
	case "pi":
		p, err = preparePi(base)
		mode = []string{"--mode", "rpc"}
		// pi reads the flag's value as a file when one is at that path.
		switch {
		case in.BriefingPath != "":
			sys = []string{"--append-system-prompt", in.BriefingPath}
		case in.Briefing != "" && len(in.Briefing) <= maxPromptArg:
			sys = []string{"--append-system-prompt", in.Briefing}
		}
	case "claude":
		p, err = prepareClaude(base)
		mode = []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"}
		switch {
		case in.Briefing != "" && len(in.Briefing) <= maxPromptArg:
			sys = []string{"--append-system-prompt", in.Briefing}
		case in.BriefingPath != "":
			// not in --help, but 2.1.197 takes it (its --bare help names it)
			sys = []string{"--append-system-prompt-file", in.BriefingPath}
		}
	default:
		return nil, fmt.Errorf("agent %s: no plan", a.Name)
	}
	if err != nil {
		return nil, err
	}
	if sys == nil {
		return nil, fmt.Errorf("agent %s: no briefing", a.Name)
	}
	cmd := append([]string{p.Command[0]}, mode...)
	cmd = append(cmd, p.Command[1:]...)
	cmd = append(cmd, sys...)
	p.Command = append(cmd, in.Args...)
	return p, nil
}

// Message is the stdin line that gives agent a its next turn's user
// message, text (already framed by the caller). A text that starts with
// "/" gets a leading newline, so the agent does not take it for one of
// its slash commands (pi's skills, templates and extension commands run
// on a prompt that starts with one).
func (a *Agent) Message(text string) ([]byte, error) {
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("agent %s: an empty message", a.Name)
	}
	if strings.HasPrefix(text, "/") {
		text = "\n" + text
	}
	var v any
	switch a.Name {
	case "pi":
		v = map[string]any{"type": "prompt", "message": text}
	case "claude":
		v = map[string]any{"type": "user", "message": map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "text", "text": text}}}}
	default:
		return nil, fmt.Errorf("agent %s: no streaming mode", a.Name)
	}
	return jsonLine(v), nil
}

// PlainMessage is the line a plain command (no agent) gets on stdin per
// message: {"type":"message","task":ID,"from":WHO,"channel":CHAN,
// "text":TEXT}, newline-terminated. The text is the message as received,
// unframed: it is untrusted, and the command's to treat as such. The
// command answers with {"type":"turn_end"} (Turns).
func PlainMessage(task, from, channel, text string) []byte {
	return jsonLine(struct {
		Type    string `json:"type"`
		Task    string `json:"task"`
		From    string `json:"from"`
		Channel string `json:"channel"`
		Text    string `json:"text"`
	}{"message", task, from, channel, text})
}

// jsonLine is v as one line of JSON: encoding/json escapes U+2028 and
// U+2029 and replaces invalid UTF-8, so the line has no newline but its
// last and no separator a JavaScript line reader splits on.
func jsonLine(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // strings always encode
	}
	return b.Bytes()
}

// Turn is one finished turn of a live session.
type Turn struct {
	// FinalText is the turn's final assistant text (its first
	// MaxTurnText bytes): the reply, unless empty or NO_REPLY.
	FinalText string
	// Err is set when the agent said the turn failed (a model error, a
	// refused prompt, an error result), or when the event that carried
	// the turn's end or final text was over MaxLine and could not be read.
	Err string
	// StopReason is the agent's last stop reason in the turn, when it
	// says one ("stop", "end_turn", "error"...).
	StopReason string
	// CostUSD is the agent's own cost claim for the turn, nil when it
	// makes none (evidence only: the gateway's figure counts). Claude
	// Code's result says the session's total so far; this is the
	// difference from the last turn's.
	CostUSD *float64
	// Tokens are the agent's own token counts for the turn, where it
	// says them (pi: summed over its model calls; Claude Code: its
	// result's usage).
	InputTokens, OutputTokens int64
}

// MaxTurnText bounds a turn's final text: four replies' worth (a reply
// is at most 16 KiB; the supervisor splits a longer text).
const MaxTurnText = 64 << 10

// maxQueued bounds the turn ends waiting for the reader; past it the
// oldest is dropped (an agent ends at most one turn per message, and the
// caller sends the next only after a turn ended: more is not an agent
// keeping to its protocol).
const maxQueued = 16

// headLen is how much of a line over MaxLine is kept: enough to read the
// event's type when it comes first, as it does in both agents' events.
const headLen = 256

// Turns reads a live session's standard output (pi's RPC events, Claude
// Code's stream-json, or a plain command's lines) as it is written and
// reports each turn's end on Ended. Like Stream, Write never fails and
// never blocks on anything but its own mutex; a line is kept up to
// MaxLine (of a longer one only its head, to see whether it ends a turn);
// anything that is not a JSON object line is skipped, and a line split
// across Writes is read once whole.
//
// The plain command's protocol: each message comes as a PlainMessage
// line; the command ends the turn by printing, on a line of its own,
// {"type":"turn_end"} with, optionally, "text" (the turn's reply) and
// "error" (non-empty: the turn failed, and why). Other lines are its own
// (kept in the transcript, not read).
type Turns struct {
	name  string
	ended chan Turn

	mu       sync.Mutex
	line     []byte
	head     []byte
	skipping bool // inside a line longer than MaxLine

	cur      Turn    // the turn in progress
	lost     bool    // the last final text's line was over MaxLine
	lastCost float64 // claude: the session's cost at the last result
	count    int     // turn ends reported, dropped ones included
}

// NewTurns returns a reader for the agent called name ("pi", "claude"),
// or for a plain command ("").
func NewTurns(name string) *Turns {
	return &Turns{name: name, ended: make(chan Turn, maxQueued)}
}

// Ended is signalled once per finished turn, in order. It is never
// closed.
func (t *Turns) Ended() <-chan Turn { return t.ended }

// Write takes the next bytes of the stream.
func (t *Turns) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !t.skipping {
			if len(t.line)+len(chunk) > MaxLine {
				t.head = append(t.head[:0], t.line[:min(len(t.line), headLen)]...)
				t.skipping, t.line = true, t.line[:0]
			} else {
				t.line = append(t.line, chunk...)
			}
		}
		if t.skipping && len(t.head) < headLen {
			t.head = append(t.head, chunk[:min(len(chunk), headLen-len(t.head))]...)
		}
		if i < 0 {
			break
		}
		if t.skipping {
			t.overlong(t.head)
		} else {
			t.event(t.line)
		}
		t.skipping, t.line, t.head = false, t.line[:0], t.head[:0]
		p = p[i+1:]
	}
	return n, nil
}

// end reports the turn in progress as ended and starts the next.
func (t *Turns) end() {
	tu := t.cur
	t.cur, t.lost = Turn{}, false
	t.emit(tu)
}

// emit reports tu as ended: never blocking, the oldest waiting turn end
// dropped when maxQueued wait.
func (t *Turns) emit(tu Turn) {
	tu.FinalText = bounded(tu.FinalText, MaxTurnText)
	t.count++
	select {
	case t.ended <- tu:
		return
	default:
	}
	select { // full: only Write sends, under t.mu, so one receive makes room
	case <-t.ended:
	default:
	}
	t.ended <- tu
}

func (t *Turns) addCost(c float64) {
	if t.cur.CostUSD == nil {
		t.cur.CostUSD = new(float64)
	}
	*t.cur.CostUSD += c
}

func (t *Turns) event(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return
	}
	switch t.name {
	case "pi":
		t.piEvent(line)
	case "claude":
		t.claudeEvent(line)
	case "":
		t.plainEvent(line)
	}
}

// overlong reads a line over MaxLine by its head: a turn's end is still a
// turn's end; its final text, if that was what it carried, is lost.
func (t *Turns) overlong(head []byte) {
	typ := leadingType(head)
	switch {
	case t.name == "pi" && typ == "message_end":
		t.lost = true // maybe not the assistant's, but then one follows
	case t.name == "pi" && typ == "agent_end":
		t.piEnd()
	case t.name == "claude" && typ == "result", t.name == "" && typ == "turn_end":
		t.emit(Turn{Err: fmt.Sprintf("the turn's %s event was over %d bytes: not read", typ, MaxLine)})
	}
}

// leadingType is the value of a JSON object's "type" when it is the
// object's first member, read from the start of a line only.
func leadingType(head []byte) string {
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimLeft(head, " \t\r")))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	if tok, err := dec.Token(); err != nil || tok != "type" {
		return ""
	}
	if tok, err := dec.Token(); err == nil {
		if s, ok := tok.(string); ok {
			return s
		}
	}
	return ""
}

// pi's RPC output: command responses and the session's events
// (docs/rpc.md in pi's package).
type piLiveEvent struct {
	Type    string `json:"type"`
	Command string `json:"command"` // a response's
	Success *bool  `json:"success"`
	Error   string `json:"error"`
	Message *struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		StopReason string          `json:"stopReason"`
		Error      string          `json:"errorMessage"`
		Usage      struct {
			Input  int64 `json:"input"`
			Output int64 `json:"output"`
			Cost   struct {
				Total *float64 `json:"total"`
			} `json:"cost"`
		} `json:"usage"`
	} `json:"message"`
}

func (t *Turns) piEvent(line []byte) {
	var ev piLiveEvent
	if json.Unmarshal(line, &ev) != nil {
		return
	}
	switch ev.Type {
	case "agent_start":
		t.cur, t.lost = Turn{}, false
	case "message_end":
		m := ev.Message
		if m == nil || m.Role != "assistant" {
			return
		}
		t.lost = false
		t.cur.FinalText = bounded(textOf(m.Content), MaxTurnText)
		t.cur.StopReason = bounded(m.StopReason, 64)
		t.cur.Err = ""
		if m.StopReason == "error" || m.StopReason == "aborted" || m.Error != "" {
			t.cur.Err = bounded(m.Error, MaxFinalText)
			if t.cur.Err == "" {
				t.cur.Err = "the model call ended: " + t.cur.StopReason
			}
		}
		if c := m.Usage.Cost.Total; c != nil {
			t.addCost(*c)
		}
		t.cur.InputTokens += m.Usage.Input
		t.cur.OutputTokens += m.Usage.Output
	case "agent_end":
		t.piEnd()
	case "response":
		// a refused prompt has no agent_end; a turn in flight (the
		// prompt came mid-turn) goes on
		if ev.Command == "prompt" && ev.Success != nil && !*ev.Success {
			tu := Turn{Err: "pi refused the prompt"}
			if ev.Error != "" {
				tu.Err += ": " + bounded(ev.Error, MaxFinalText)
			}
			t.emit(tu)
		}
	}
}

func (t *Turns) piEnd() {
	if t.lost {
		t.cur.FinalText = ""
		t.cur.Err = fmt.Sprintf("the turn's last message was over %d bytes: not read", MaxLine)
	}
	t.end()
}

// Claude Code's result line (the rest of its stream-json is Stream's).
type claudeResult struct {
	Type    string   `json:"type"`
	Subtype string   `json:"subtype"`
	IsError bool     `json:"is_error"`
	Result  *string  `json:"result"`
	Stop    string   `json:"stop_reason"`
	CostUSD *float64 `json:"total_cost_usd"`
	Errors  []string `json:"errors"`
	Usage   struct {
		Input  int64 `json:"input_tokens"`
		Output int64 `json:"output_tokens"`
	} `json:"usage"`
}

func (t *Turns) claudeEvent(line []byte) {
	var ev claudeResult
	if json.Unmarshal(line, &ev) != nil || ev.Type != "result" {
		return
	}
	tu := Turn{StopReason: bounded(ev.Stop, 64), InputTokens: ev.Usage.Input, OutputTokens: ev.Usage.Output}
	if ev.Result != nil {
		tu.FinalText = bounded(*ev.Result, MaxTurnText)
	}
	if ev.Subtype != "" && ev.Subtype != "success" && tu.StopReason == "" {
		tu.StopReason = bounded(ev.Subtype, 64)
	}
	if ev.IsError || ev.Subtype != "" && ev.Subtype != "success" {
		msg := ev.Subtype
		switch {
		case len(ev.Errors) > 0:
			msg = strings.Join(ev.Errors, "; ")
		case ev.Result != nil && *ev.Result != "":
			msg = *ev.Result
		case msg == "":
			msg = "an error result"
		}
		tu.Err = bounded(msg, MaxFinalText)
	}
	if c := ev.CostUSD; c != nil {
		// the session's total: this turn's is what it grew by
		d := max(*c-t.lastCost, 0)
		tu.CostUSD, t.lastCost = &d, *c
	}
	t.emit(tu)
}

func (t *Turns) plainEvent(line []byte) {
	var ev struct {
		Type  string `json:"type"`
		Text  string `json:"text"`
		Error string `json:"error"`
	}
	if json.Unmarshal(line, &ev) != nil || ev.Type != "turn_end" {
		return
	}
	t.emit(Turn{FinalText: ev.Text, Err: bounded(ev.Error, MaxFinalText)})
}
