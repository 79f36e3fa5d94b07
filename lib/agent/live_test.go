package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// The testdata/live-* streams are real: captured from pi 0.73.1 and Claude
// Code 2.1.197 in their streaming mode against lib/fakemodel by
// TestRealAgentLiveSessionTwoMessagesOneProcess and TestRealAgentLiveCapture
// (-live-capture).

// wantTurn is a turn as a test expects it: Err as a prefix.
type wantTurn struct {
	text, err, stop string
	cost            float64 // -1: no claim
	in, out         int64
}

func TestTurnsFromRealLiveStreams(t *testing.T) {
	const c = 0.00135 // one call of 120 in, 30 out at the fake model's Opus prices
	ok := func(text, stop string, cost float64, in, out int64) wantTurn {
		return wantTurn{text: text, stop: stop, cost: cost, in: in, out: out}
	}
	for _, tc := range []struct {
		file, agent string
		turns       []wantTurn
	}{
		{"live-pi-0.73.1-two-turns.jsonl", "pi", []wantTurn{ok("First answer.", "stop", c, 120, 30), ok("Second answer.", "stop", c, 120, 30)}},
		{"live-claude-2.1.197-two-turns.jsonl", "claude", []wantTurn{ok("First answer.", "end_turn", c, 120, 30), ok("Second answer.", "end_turn", c, 120, 30)}},
		// a tool call, then the final text: the turn's text is the last
		{"live-pi-0.73.1-tool-turn.jsonl", "pi", []wantTurn{ok("It says looked.", "stop", 2*c, 240, 60)}},
		{"live-claude-2.1.197-tool-turn.jsonl", "claude", []wantTurn{ok("It says looked.", "end_turn", 2*c, 240, 60)}},
		{"live-pi-0.73.1-model-error.jsonl", "pi", []wantTurn{
			{err: `400 {"error":{"message":"fakemodel: scripted error"`, stop: "error"},
			{err: `400 {"error":{"message":"fakemodel: scripted error"`, stop: "error"}}},
		{"live-claude-2.1.197-model-error.jsonl", "claude", []wantTurn{
			{text: "API Error: 400 fakemodel: scripted error", err: "API Error: 400 fakemodel: scripted error", stop: "stop_sequence"},
			{text: "API Error: 400 fakemodel: scripted error", err: "API Error: 400 fakemodel: scripted error", stop: "stop_sequence"}}},
		// a message mid-turn, then one after the turn. pi refuses it (a
		// failed turn end first) or, before its first run started, takes
		// and loses it; Claude Code runs it as a turn after, or folds it
		// into the turn in flight.
		{"live-pi-0.73.1-mid-turn.jsonl", "pi", []wantTurn{
			{err: "pi refused the prompt: Agent is already processing", cost: -1},
			ok("Waited.", "stop", 2*c, 240, 60), ok("Next one.", "stop", c, 120, 30)}},
		{"live-pi-0.73.1-prompt-while-starting.jsonl", "pi", []wantTurn{ok("Waited.", "stop", 2*c, 240, 60), ok("Next one.", "stop", c, 120, 30)}},
		{"live-claude-2.1.197-mid-turn.jsonl", "claude", []wantTurn{ok("Waited.", "end_turn", 2*c, 240, 60), ok("Next one.", "end_turn", c, 120, 30),
			ok("fakemodel: the script has no turn 4", "end_turn", c, 120, 30)}},
		{"live-claude-2.1.197-mid-turn-folded.jsonl", "claude", []wantTurn{ok("Waited.", "end_turn", 2*c, 240, 60), ok("Next one.", "end_turn", c, 120, 30)}},
		// the input closed mid-turn: pi exits at once, Claude Code finishes
		{"live-pi-0.73.1-eof-mid-turn.jsonl", "pi", nil},
		{"live-claude-2.1.197-eof-mid-turn.jsonl", "claude", []wantTurn{ok("Waited.", "end_turn", 2*c, 240, 60)}},
	} {
		data := readTestdata(t, tc.file)
		for _, size := range []int{len(data), 1, 7, 4096} {
			got := feedTurns(NewTurns(tc.agent), data, size)
			if len(got) != len(tc.turns) {
				t.Errorf("%s by %d: %d turns %+v", tc.file, size, len(got), got)
				continue
			}
			for i, w := range tc.turns {
				checkTurn(t, fmt.Sprintf("%s by %d: turn %d", tc.file, size, i+1), got[i], w)
			}
		}
	}
}

func checkTurn(t *testing.T, what string, g Turn, w wantTurn) {
	t.Helper()
	if g.FinalText != w.text || !strings.HasPrefix(g.Err, w.err) || (w.err == "") != (g.Err == "") || g.StopReason != w.stop {
		t.Errorf("%s: %+v, want %+v", what, g, w)
	}
	switch {
	case w.cost < 0 && g.CostUSD != nil:
		t.Errorf("%s: cost %v, want none", what, *g.CostUSD)
	case w.cost >= 0 && (g.CostUSD == nil || *g.CostUSD < w.cost-1e-9 || *g.CostUSD > w.cost+1e-9):
		t.Errorf("%s: cost %v, want %v", what, g.CostUSD, w.cost)
	}
	if g.InputTokens != w.in || g.OutputTokens != w.out {
		t.Errorf("%s: tokens %d/%d, want %d/%d", what, g.InputTokens, g.OutputTokens, w.in, w.out)
	}
}

// feedTurns writes data to tr in pieces of size and returns the turn ends
// reported, draining Ended after each piece.
func feedTurns(tr *Turns, data []byte, size int) []Turn {
	var got []Turn
	drain := func() {
		for {
			select {
			case tu := <-tr.Ended():
				got = append(got, tu)
			default:
				return
			}
		}
	}
	for p := data; len(p) > 0; {
		n := min(size, len(p))
		if w, err := tr.Write(p[:n]); w != n || err != nil {
			panic("Turns.Write failed")
		}
		p = p[n:]
		drain()
	}
	drain()
	return got
}

func TestPrepareLiveCommandLines(t *testing.T) {
	pi, _ := For("pi")
	claude, _ := For("claude")
	in := anthropicInput()
	in.Args = []string{"--thinking", "off"}
	in.Model = "claude-sonnet-4-5"
	in.Interactive = true // a live session has no terminal: ignored
	p, err := pi.PrepareLive(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"pi", "--mode", "rpc", "--offline", "--provider", "anthropic", "--model", "claude-sonnet-4-5",
		"--tools", "read,bash,edit,write", "--session-dir", BoxAgentDir + "/sessions",
		"--append-system-prompt", in.BriefingPath, "--thinking", "off"}
	if !reflect.DeepEqual(p.Command, want) {
		t.Errorf("pi live: %q", p.Command)
	}
	// the rest of the plan is the headless one's
	in.Interactive = false
	h, _ := pi.Prepare(in)
	if !reflect.DeepEqual(p.Env, h.Env) || !reflect.DeepEqual(p.Files, h.Files) || p.SessionDir != h.SessionDir {
		t.Errorf("pi live plan %+v, headless %+v", p, h)
	}

	p, err = claude.PrepareLive(in)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"claude", "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
		"--permission-mode", "bypassPermissions", "--model", "claude-sonnet-4-5",
		"--append-system-prompt", in.Briefing, "--thinking", "off"}
	if !reflect.DeepEqual(p.Command, want) {
		t.Errorf("claude live: %q", p.Command)
	}
	h, _ = claude.Prepare(in)
	if !reflect.DeepEqual(p.Env, h.Env) || !reflect.DeepEqual(p.Files, h.Files) || p.SessionDir != h.SessionDir {
		t.Errorf("claude live plan %+v, headless %+v", p, h)
	}

	// A briefing too long for an argument: Claude Code reads the file.
	long := in
	long.Briefing = strings.Repeat("x", maxPromptArg+1)
	if p, err := claude.PrepareLive(long); err != nil || !strings.Contains(strings.Join(p.Command, " "), "--append-system-prompt-file "+in.BriefingPath) {
		t.Errorf("claude, a long briefing: %v %q", err, p.Command)
	}
	// Only the text: pi gets the text.
	text := in
	text.BriefingPath = ""
	if p, err := pi.PrepareLive(text); err != nil || p.Command[len(p.Command)-3] != in.Briefing {
		t.Errorf("pi, the briefing's text: %v %q", err, p.Command)
	}
	for _, a := range []*Agent{pi, claude} {
		none := in
		none.Briefing, none.BriefingPath = "", ""
		if _, err := a.PrepareLive(none); err == nil {
			t.Errorf("%s: no briefing, no error", a.Name)
		}
		none = in
		none.BaseURL = ""
		if _, err := a.PrepareLive(none); err == nil {
			t.Errorf("%s: no route, no error", a.Name)
		}
	}
	openai := in
	openai.ProviderStyle = "openai"
	if _, err := claude.PrepareLive(openai); err == nil {
		t.Error("claude on an OpenAI route: no error")
	}
	if _, err := (&Agent{Name: "codex"}).PrepareLive(in); err == nil {
		t.Error("an unknown agent: no error")
	}
}

func TestMessageLines(t *testing.T) {
	pi, _ := For("pi")
	claude, _ := For("claude")
	text := "[message from alice] \"hi\" <b>&\u2028next\nline"
	for _, tc := range []struct {
		a    *Agent
		want string
	}{
		{pi, `{"message":"[message from alice] \"hi\" <b>&\u2028next\nline","type":"prompt"}`},
		{claude, `{"message":{"content":[{"text":"[message from alice] \"hi\" <b>&\u2028next\nline","type":"text"}],"role":"user"},"type":"user"}`},
	} {
		b, err := tc.a.Message(text)
		if err != nil || string(b) != tc.want+"\n" {
			t.Errorf("%s: %s %v", tc.a.Name, b, err)
		}
		if bytes.Count(b, []byte("\n")) != 1 || bytes.ContainsRune(b, '\u2028') {
			t.Errorf("%s: not one line: %q", tc.a.Name, b)
		}
		// a slash command is not run
		b, _ = tc.a.Message("/skill:x do it")
		if !bytes.Contains(b, []byte(`"\n/skill:x do it"`)) {
			t.Errorf("%s: a leading slash: %s", tc.a.Name, b)
		}
		if _, err := tc.a.Message(" \n"); err == nil {
			t.Errorf("%s: an empty message, no error", tc.a.Name)
		}
	}
	if _, err := (&Agent{Name: "codex"}).Message("hi"); err == nil {
		t.Error("an unknown agent's message: no error")
	}
}

func TestPlainMessageAndTurnEnd(t *testing.T) {
	b := PlainMessage("t-1", "alice@chat.example.org", "team:alice@chat.example.org", "hi\n\"there\" <&>")
	want := `{"type":"message","task":"t-1","from":"alice@chat.example.org","channel":"team:alice@chat.example.org","text":"hi\n\"there\" <&>"}` + "\n"
	if string(b) != want {
		t.Errorf("plain message %s", b)
	}
	var m map[string]string
	if json.Unmarshal(b, &m) != nil || m["type"] != "message" || m["text"] != "hi\n\"there\" <&>" {
		t.Errorf("plain message decodes to %v", m)
	}
	stream := strings.Join([]string{
		"working on it",
		`{"type":"log","text":"not an end"}`,
		`{"type":"turn_end","text":"the reply"}`,
		`not json {"type":"turn_end"}`,
		`{"type":"turn_end"}`,
		`{"type":"turn_end","text":"half","error":"it broke"}`,
		`["type","turn_end"]`,
		`  {"type":"turn_end","text":"indented, CRLF"}` + "\r",
		`{"type":"turn_end","text":"torn, no newline yet"}`,
	}, "\n")
	got := feedTurns(NewTurns(""), []byte(stream), 5)
	want2 := []Turn{{FinalText: "the reply"}, {}, {FinalText: "half", Err: "it broke"}, {FinalText: "indented, CRLF"}}
	if !reflect.DeepEqual(got, want2) {
		t.Errorf("plain turns %+v", got)
	}
}

func TestTurnsOverlongLines(t *testing.T) {
	big := strings.Repeat("x", MaxLine)
	piText := func(s string) string {
		return `{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"` + s + `"}],"stopReason":"stop"}}`
	}
	for _, tc := range []struct {
		name, stream string
		want         []Turn
	}{
		// pi's agent_end repeats the turn's messages: long, still an end
		{"pi", piText("short") + "\n" + `{"type":"agent_end","messages":["` + big + `"]}` + "\n",
			[]Turn{{FinalText: "short", StopReason: "stop"}}},
		// the final text's line too long: the turn ends, failed
		{"pi", `{"type":"agent_start"}` + "\n" + piText(big) + "\n" + `{"type":"agent_end","messages":[]}` + "\n",
			[]Turn{{Err: "the turn's last message was over 1048576 bytes: not read"}}},
		// a long line of another kind changes nothing
		{"pi", `{"type":"message_update","x":"` + big + `"}` + "\n" + piText("kept") + "\n" + `{"type":"agent_end"}` + "\n",
			[]Turn{{FinalText: "kept", StopReason: "stop"}}},
		{"claude", `{"type":"result","subtype":"success","result":"` + big + `"}` + "\n" + `{"type":"result","subtype":"success","result":"next"}` + "\n",
			[]Turn{{Err: "the turn's result event was over 1048576 bytes: not read"}, {FinalText: "next"}}},
		{"", `{"type":"turn_end","text":"` + big + `"}` + "\n",
			[]Turn{{Err: "the turn's turn_end event was over 1048576 bytes: not read"}}},
		// "type" not first, or inside a string: not read from a head
		{"", `{"text":"` + big + `","type":"turn_end"}` + "\n" + `{"x":"{\"type\":\"turn_end\"` + big + `"}` + "\n", nil},
	} {
		for _, size := range []int{len(tc.stream), 4096, 1 << 19} {
			got := feedTurns(NewTurns(tc.name), []byte(tc.stream), size)
			for i := range got {
				got[i].CostUSD = nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%q by %d: %+v", tc.name, size, got)
			}
		}
	}
}

func TestTurnsFinalTextBounded(t *testing.T) {
	long := strings.Repeat("é", MaxTurnText)
	got := feedTurns(NewTurns("claude"), []byte(`{"type":"result","subtype":"success","result":"`+long+"\"}\n"), 1<<20)
	if len(got) != 1 || len(got[0].FinalText) > MaxTurnText || len(got[0].FinalText) < MaxTurnText-1 || !strings.HasPrefix(long, got[0].FinalText) {
		t.Errorf("final text %d bytes", len(got[0].FinalText))
	}
}

// An agent that ends turns nobody reads never blocks its writer: the
// reader finds the latest maxQueued, in order.
func TestTurnsNeverBlockAndKeepTheLatest(t *testing.T) {
	tr := NewTurns("")
	for i := range 3 * maxQueued {
		fmt.Fprintf(tr, `{"type":"turn_end","text":"%d"}`+"\n", i)
	}
	got := feedTurns(tr, nil, 1)
	if len(got) != maxQueued || got[0].FinalText != fmt.Sprint(2*maxQueued) || got[maxQueued-1].FinalText != fmt.Sprint(3*maxQueued-1) {
		t.Errorf("%d turns: %+v", len(got), got)
	}
	if tr.count != 3*maxQueued {
		t.Errorf("count %d", tr.count)
	}
}

// Write and Ended from two goroutines (go test -race).
func TestTurnsConcurrentReader(t *testing.T) {
	tr := NewTurns("claude")
	const n = 200
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			fmt.Fprintf(tr, `{"type":"result","subtype":"success","result":"%d","total_cost_usd":%d}`+"\n", i, i)
		}
	}()
	last := -1
	for seen := 0; last < n-1; seen++ {
		tu := <-tr.Ended()
		var i int
		fmt.Sscan(tu.FinalText, &i)
		if i <= last {
			t.Fatalf("turn %d after %d", i, last)
		}
		last = i
	}
	wg.Wait()
}

// endingLines is an upper bound of the turn ends data can hold: its
// newline-terminated lines that name the turn-ending event (or a pi
// prompt's response), or could spell it with an escape.
func endingLines(name string, data []byte) int {
	words := map[string][]string{"pi": {"agent_end", "prompt"}, "claude": {"result"}, "": {"turn_end"}}[name]
	n := 0
	lines := bytes.Split(data, []byte("\n"))
	for _, l := range lines[:len(lines)-1] { // the last is not terminated
		hit := bytes.IndexByte(l, '\\') >= 0
		for _, w := range words {
			hit = hit || bytes.Contains(l, []byte(w))
		}
		if hit {
			n++
		}
	}
	return n
}

func FuzzTurns(f *testing.F) {
	// the recordings' short lines, one seed each (whole files make the
	// coverage-guided fuzzer crawl)
	for _, name := range []string{"live-pi-0.73.1-mid-turn.jsonl", "live-claude-2.1.197-mid-turn.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		for _, l := range bytes.SplitAfter(b, []byte("\n")) {
			if len(l) < 1024 {
				f.Add(l, uint16(len(l)/2))
			}
		}
	}
	f.Add([]byte(`{"type":"turn_end","text":"a"}`+"\n"+`{"type":"agent_end"}`+"\n"+`{"type":"response","command":"prompt","success":false}`+"\n"), uint16(3))
	f.Add([]byte(`{"type":"\u0072esult"}`+"\n"+`{"type":"result","is_error":true,"errors":["x"]}`+"\r\n"), uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, split uint16) {
		cut := int(split) % (len(data) + 1)
		for _, name := range []string{"pi", "claude", ""} {
			whole := NewTurns(name)
			all := feedTurns(whole, data, len(data)+1)
			parts := NewTurns(name)
			parts.Write(data[:cut])
			parts.Write(data[cut:])
			if got := feedTurns(parts, nil, 1); !reflect.DeepEqual(all, got) && whole.count <= maxQueued {
				t.Errorf("%q: whole %+v, in two %+v", name, all, got)
			}
			if max := endingLines(name, data); whole.count > max || len(all) > max {
				t.Errorf("%q: %d turn ends from %d ending lines", name, whole.count, max)
			}
			for _, tu := range all {
				if len(tu.FinalText) > MaxTurnText || len(tu.Err) > MaxFinalText+64 {
					t.Errorf("%q: unbounded turn %d/%d", name, len(tu.FinalText), len(tu.Err))
				}
			}
		}
	})
}
