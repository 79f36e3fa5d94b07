package outbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Limits (docs/dispatch-and-box.md).
const (
	MaxActionSize  = 1 << 20  // bytes per action file
	MaxActions     = 1000     // actions per run
	MaxActionBytes = 16 << 20 // bytes of action files read per run (Containment)
	MaxTmpBytes    = 16 << 20 // disk used in tmp/ at any time (Containment)
	MaxTmpEntries  = 4096     // entries in tmp/ at any time (each claim is one)
)

// Kinds of action.
const (
	KindComplete = "complete"
	KindFail     = "fail"
	KindFile     = "file"
	KindSet      = "set"
	KindPropose  = "propose"
	KindReply    = "reply"
)

// Action is one request from the box: new/N.json.
type Action struct {
	Format  int             `json:"format"`
	Kind    string          `json:"kind"`
	Summary string          `json:"summary,omitempty"` // complete
	Reason  string          `json:"reason,omitempty"`  // fail
	Text    string          `json:"text,omitempty"`    // file
	At      string          `json:"at,omitempty"`      // file: when (as roster-task add --at)
	After   []string        `json:"after,omitempty"`   // file: dependencies
	Version int64           `json:"version,omitempty"` // set: the version the worker read
	Set     json.RawMessage `json:"set,omitempty"`     // set: {"tasks":[...],"templates":[...]}
	What    string          `json:"what,omitempty"`    // propose
	Wake    bool            `json:"wake,omitempty"`    // propose
	Channel string          `json:"channel,omitempty"` // reply: the channel ("" = the one the run serves)
}

// ErrBadAction is the error of an action file that is refused as input.
var ErrBadAction = errors.New("bad action")

func bad(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadAction, fmt.Sprintf(format, a...))
}

// Decode parses and checks one action file. Unknown fields, an unknown
// kind or format, missing fields and text that is not UTF-8 are refused.
func Decode(data []byte) (*Action, error) {
	if len(data) > MaxActionSize {
		return nil, bad("over %d bytes", MaxActionSize)
	}
	if !utf8.Valid(data) {
		return nil, bad("not UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var a Action
	if err := dec.Decode(&a); err != nil {
		return nil, bad("not a valid action: %v", err)
	}
	if dec.More() {
		return nil, bad("trailing data after the action")
	}
	if err := a.Check(); err != nil {
		return nil, err
	}
	return &a, nil
}

// Check verifies the fields a kind needs.
func (a *Action) Check() error {
	if a.Format != 1 {
		return bad("unknown format %d", a.Format)
	}
	switch a.Kind {
	case KindComplete:
	case KindFail:
		if a.Reason == "" {
			return bad("fail needs a reason")
		}
	case KindFile:
		if a.Text == "" {
			return bad("file needs a text")
		}
	case KindSet:
		if a.Version < 0 {
			return bad("set: negative version")
		}
		t := bytes.TrimSpace(a.Set)
		if len(t) == 0 || t[0] != '{' {
			return bad("set needs an object with tasks and templates")
		}
	case KindPropose:
		if a.What == "" {
			return bad("propose needs what to decide")
		}
	case KindReply:
		if a.Text == "" {
			return bad("reply needs a text")
		}
	case "":
		return bad("no kind")
	default:
		return bad("unknown kind %q", truncate(a.Kind, 40))
	}
	for _, id := range a.After {
		if id == "" {
			return bad("empty id in after")
		}
	}
	return nil
}

// Encode is the file form of a.
func Encode(a *Action) ([]byte, error) {
	a.Format = 1
	if err := a.Check(); err != nil {
		return nil, err
	}
	return json.Marshal(a)
}

// Outcome is the host's answer: done/N.json.
type Outcome struct {
	Format   int      `json:"format"`
	N        int      `json:"n"`
	Kind     string   `json:"kind"`
	Outcome  string   `json:"outcome"` // "ok" or "refused"
	Code     int      `json:"code"`    // the in-box command's exit status
	Message  string   `json:"message,omitempty"`
	Task     string   `json:"task,omitempty"`     // file: the new task
	Gate     string   `json:"gate,omitempty"`     // propose: the new gate
	Version  int64    `json:"version,omitempty"`  // set: the new version
	Refusals []string `json:"refusals,omitempty"` // set: every refused entry with its reason
}

// Exit statuses carried in Outcome.Code.
const (
	CodeOK       = 0
	CodeFailed   = 1
	CodeBadInput = 2
	CodeConflict = 13
)

// Ok reports whether the action was applied.
func (o *Outcome) Ok() bool { return o.Outcome == "ok" }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
