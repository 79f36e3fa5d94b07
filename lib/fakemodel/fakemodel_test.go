package fakemodel

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const key = "sk-ant-test-key"

var toolThenText = Script{Turns: []Turn{
	{Text: "writing it", Tool: &ToolCall{Name: "bash", Input: map[string]any{"command": "echo hi > ~/store/x"}}},
	{Text: "All done, the file is written.", InputTokens: 200, OutputTokens: 7, CacheRead: 50},
}}

func post(t *testing.T, srv http.Handler, path string, hdr map[string]string, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("POST", path, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	return rec
}

type event struct {
	name string
	data map[string]any
}

func readSSE(t *testing.T, body string) []event {
	t.Helper()
	var out []event
	var name string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			d := line[len("data: "):]
			ev := event{name: name}
			if d != "[DONE]" {
				if err := json.Unmarshal([]byte(d), &ev.data); err != nil {
					t.Fatalf("bad data line %q: %v", d, err)
				}
			} else {
				ev.name = "[DONE]"
			}
			out = append(out, ev)
			name = ""
		}
	}
	return out
}

func TestAnthropicStreamToolUseThenText(t *testing.T) {
	srv := New(key, toolThenText)
	hdr := map[string]string{"x-api-key": key}
	rec := post(t, srv, "/v1/messages", hdr, `{"model":"claude-sonnet-4-5","stream":true,"messages":[{"role":"user","content":"go"}]}`)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	evs := readSSE(t, rec.Body.String())
	var names []string
	var input, text strings.Builder
	for _, e := range evs {
		if e.name != e.data["type"] {
			t.Errorf("event %q carries type %v", e.name, e.data["type"])
		}
		names = append(names, e.name)
		if d, ok := e.data["delta"].(map[string]any); ok {
			if pj, ok := d["partial_json"].(string); ok {
				input.WriteString(pj)
			}
			if tx, ok := d["text"].(string); ok {
				text.WriteString(tx)
			}
		}
	}
	if names[0] != "message_start" || names[len(names)-1] != "message_stop" || names[len(names)-2] != "message_delta" {
		t.Errorf("event order %v", names)
	}
	var in map[string]any
	if err := json.Unmarshal([]byte(input.String()), &in); err != nil || in["command"] != "echo hi > ~/store/x" {
		t.Errorf("tool input %q: %v", input.String(), err)
	}
	if text.String() != "writing it" {
		t.Errorf("text %q", text.String())
	}
	md := evs[len(evs)-2].data
	if md["delta"].(map[string]any)["stop_reason"] != "tool_use" || md["usage"].(map[string]any)["output_tokens"].(float64) != DefaultOutputTokens {
		t.Errorf("message_delta %v", md)
	}
	ms := evs[0].data["message"].(map[string]any)["usage"].(map[string]any)
	if ms["input_tokens"].(float64) != DefaultInputTokens {
		t.Errorf("message_start usage %v", ms)
	}

	// The tool result comes back with the assistant's turn in the history:
	// turn 1, the final text, with the script's usage.
	rec = post(t, srv, "/v1/messages", map[string]string{"Authorization": "Bearer " + key},
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[]},
		 {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_fake_1","content":[{"type":"text","text":"hi written"}]}]}]}`)
	evs = readSSE(t, rec.Body.String())
	text.Reset()
	for _, e := range evs {
		if d, ok := e.data["delta"].(map[string]any); ok {
			if tx, ok := d["text"].(string); ok {
				text.WriteString(tx)
			}
		}
	}
	if text.String() != "All done, the file is written." {
		t.Errorf("turn 2 text %q", text.String())
	}
	calls := srv.Calls()
	if len(calls) != 2 {
		t.Fatalf("calls %v", calls)
	}
	if calls[0].Key != key || calls[1].Key != key || calls[0].Turn != 0 || calls[1].Turn != 1 || !calls[1].Stream {
		t.Errorf("calls %+v", calls)
	}
	if calls[1].LastUser != "hi written" || calls[1].InputTokens != 200 || calls[1].OutputTokens != 7 || calls[1].CacheRead != 50 {
		t.Errorf("call 2 %+v", calls[1])
	}
}

func TestAnthropicJSON(t *testing.T) {
	srv := New(key, toolThenText)
	rec := post(t, srv, "/v1/messages", map[string]string{"x-api-key": key}, `{"model":"m","messages":[{"role":"user","content":"go"}]}`)
	var m struct {
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type  string         `json:"type"`
			Text  string         `json:"text"`
			Name  string         `json:"name"`
			Input map[string]any `json:"input"`
		} `json:"content"`
		Usage struct {
			InputTokens int `json:"input_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m.StopReason != "tool_use" || len(m.Content) != 2 || m.Content[1].Name != "bash" || m.Content[1].Input["command"] == nil || m.Usage.InputTokens != DefaultInputTokens {
		t.Errorf("answer %+v", m)
	}
}

func TestOpenAIStreamAndJSON(t *testing.T) {
	srv := New(key, toolThenText)
	hdr := map[string]string{"Authorization": "Bearer " + key}
	rec := post(t, srv, "/v1/chat/completions", hdr, `{"model":"gpt-x","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"go"}]}`)
	evs := readSSE(t, rec.Body.String())
	if evs[len(evs)-1].name != "[DONE]" {
		t.Fatalf("no [DONE]: %v", evs)
	}
	var args strings.Builder
	var finish string
	var usage map[string]any
	for _, e := range evs[:len(evs)-1] {
		if u, ok := e.data["usage"].(map[string]any); ok {
			usage = u
		}
		for _, c := range e.data["choices"].([]any) {
			ch := c.(map[string]any)
			if f, ok := ch["finish_reason"].(string); ok {
				finish = f
			}
			if tcs, ok := ch["delta"].(map[string]any)["tool_calls"].([]any); ok {
				args.WriteString(tcs[0].(map[string]any)["function"].(map[string]any)["arguments"].(string))
			}
		}
	}
	if finish != "tool_calls" || !strings.Contains(args.String(), "~/store/x") || usage["prompt_tokens"].(float64) != DefaultInputTokens {
		t.Errorf("finish %q args %q usage %v", finish, args.String(), usage)
	}
	rec = post(t, srv, "/v1/chat/completions", hdr, `{"model":"gpt-x","messages":[{"role":"user","content":"go"},{"role":"assistant","content":null},{"role":"tool","content":"ok"}]}`)
	var m struct {
		Choices []struct {
			Message      struct{ Content string }
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m.Choices[0].FinishReason != "stop" || m.Choices[0].Message.Content != "All done, the file is written." || m.Usage.PromptTokens != 250 || m.Usage.CompletionTokens != 7 {
		t.Errorf("answer %+v", m)
	}
	if c := srv.Calls(); c[1].Provider != "openai" || c[1].LastUser != "ok" || c[1].Model != "gpt-x" {
		t.Errorf("calls %+v", c)
	}
}

func TestWrongKeyIs401InTheProvidersShape(t *testing.T) {
	srv := New(key, toolThenText)
	for _, tc := range []struct {
		path, hdr, val, want string
	}{
		{"/v1/messages", "x-api-key", "roster-placeholder", `"type":"authentication_error"`},
		{"/v1/messages", "", "", `"type":"authentication_error"`},
		{"/v1/chat/completions", "Authorization", "Bearer nope", `"code":"invalid_api_key"`},
	} {
		hdr := map[string]string{}
		if tc.hdr != "" {
			hdr[tc.hdr] = tc.val
		}
		rec := post(t, srv, tc.path, hdr, `{"model":"m","stream":true,"messages":[]}`)
		if rec.Code != 401 || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("%s %s: %d %s", tc.path, tc.val, rec.Code, rec.Body)
		}
	}
	calls := srv.Calls()
	if len(calls) != 3 || calls[0].Key != "roster-placeholder" || calls[0].Status != 401 || calls[0].InputTokens != 0 {
		t.Errorf("calls %+v", calls)
	}
}

func TestScriptedStatus(t *testing.T) {
	srv := New(key, Script{Turns: []Turn{{Status: 401}}})
	rec := post(t, srv, "/v1/messages", map[string]string{"x-api-key": key}, `{"model":"m","messages":[]}`)
	if rec.Code != 401 || !strings.Contains(rec.Body.String(), "authentication_error") {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
	if c := srv.Calls(); c[0].Key != key || c[0].Status != 401 {
		t.Errorf("calls %+v", c)
	}
}

func TestPastTheScriptIsAFinalText(t *testing.T) {
	srv := New(key, Script{})
	rec := post(t, srv, "/v1/messages", map[string]string{"x-api-key": key}, `{"model":"m","messages":[]}`)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "no turn 1") || !strings.Contains(rec.Body.String(), `"end_turn"`) {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
}

func TestBadRequests(t *testing.T) {
	srv := New(key, Script{})
	if rec := post(t, srv, "/v1/other", nil, `{}`); rec.Code != 404 {
		t.Errorf("unknown path: %d", rec.Code)
	}
	if rec := post(t, srv, "/v1/messages", map[string]string{"x-api-key": key}, `{not json`); rec.Code != 400 {
		t.Errorf("bad body: %d", rec.Code)
	}
	req := httptest.NewRequest("GET", "/v1/messages", nil)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != 405 {
		t.Errorf("GET: %d", rec.Code)
	}
}

func TestListenOnlyLoopback(t *testing.T) {
	for _, a := range []string{"0.0.0.0:0", "example.com:80", "10.0.0.1:0", ":0", "localhost:0"} {
		if ln, err := Listen(a); err == nil {
			ln.Close()
			t.Errorf("Listen(%q) accepted", a)
		}
	}
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}

func TestParseScript(t *testing.T) {
	s, err := ParseScript([]byte(`{"turns":[{"tool":{"name":"bash","input":{"command":"ls"}}},{"text":"ok"}]}`))
	if err != nil || len(s.Turns) != 2 || s.Turns[0].Tool.Input["command"] != "ls" {
		t.Fatalf("%+v %v", s, err)
	}
	for _, bad := range []string{`{"turns":[{"txt":"typo"}]}`, `{"turns":[{"tool":{}}]}`, `{"turns":[{"status":7}]}`, `[`} {
		if _, err := ParseScript([]byte(bad)); err == nil {
			t.Errorf("ParseScript(%s) accepted", bad)
		}
	}
}

func FuzzServe(f *testing.F) {
	f.Add("/v1/messages", `{"model":"m","stream":true,"messages":[{"role":"user","content":[{"type":"tool_result","content":[{"text":"x"}]}]}]}`)
	f.Add("/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"tool","content":"x"}]}`)
	f.Add("/v1/messages", `{"messages":[{"role":"user","content":[[[[[[]]]]]]}]}`)
	f.Fuzz(func(t *testing.T, path, body string) {
		srv := New(key, toolThenText)
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req := httptest.NewRequest("POST", "/", strings.NewReader(body))
		req.URL.Path = path
		req.Header.Set("x-api-key", key)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code == 0 {
			t.Fatal("no status")
		}
	})
}

// Named scripts: a conversation whose first user message says
// "fakemodel-script: NAME" follows NAME; one whose model is a script's
// name follows it; the rest follow the default. The tag is found past the
// 4 KiB kept as LastUser (a briefing puts the task text ~3 KB in).
func TestNamedScripts(t *testing.T) {
	srv := New(key, Script{Turns: []Turn{{Text: "default"}}})
	srv.Name("deploy", Script{Turns: []Turn{{Text: "deploying"}}})
	srv.Name("model-b", Script{Turns: []Turn{{Text: "worker b"}}})
	hdr := map[string]string{"x-api-key": key}
	long := strings.Repeat("briefing ", 900)
	for _, c := range []struct{ body, want, script string }{
		{`{"model":"m","messages":[{"role":"user","content":"` + long + `\nfakemodel-script: deploy\n"}]}`, "deploying", "deploy"},
		{`{"model":"model-b","messages":[{"role":"user","content":"hello"}]}`, "worker b", "model-b"},
		{`{"model":"model-b","messages":[{"role":"user","content":[{"type":"text","text":"fakemodel-script: deploy"}]}]}`, "deploying", "deploy"},
		{`{"model":"m","messages":[{"role":"user","content":"fakemodel-script: nosuch"}]}`, "default", ""},
		{`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"x"},{"role":"user","content":"fakemodel-script: deploy"}]}`, "fakemodel: the script has no turn 2", ""},
	} {
		rec := post(t, srv, "/v1/messages", hdr, c.body)
		if !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%.60s...: got %s, want %q", c.body, rec.Body.String(), c.want)
		}
		calls := srv.Calls()
		if got := calls[len(calls)-1].Script; got != c.script {
			t.Errorf("%.60s...: script %q, want %q", c.body, got, c.script)
		}
	}
}
