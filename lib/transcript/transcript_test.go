package transcript

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func entries(t testing.TB, in string) []Entry {
	t.Helper()
	r := NewReader(strings.NewReader(in), "")
	var es []Entry
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			return es
		}
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
}

// Every line of the recorded real pi and Claude Code transcripts is
// recognised as an agent's event: none falls through as raw.
func TestRecordedTranscriptsHaveNoRawLines(t *testing.T) {
	files, _ := filepath.Glob("../agent/testdata/*.jsonl")
	if len(files) < 10 {
		t.Fatalf("recordings: %d files", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		es := entries(t, string(b))
		kinds := map[string]int{}
		for _, e := range es {
			kinds[e.Kind]++
			if e.Kind == Raw {
				t.Errorf("%s line %d: raw %.80q", f, e.Line, e.Text)
			}
		}
		if kinds[Assistant]+kinds[Error] == 0 {
			t.Errorf("%s: no assistant text and no error in %v", f, kinds)
		}
	}
}

func TestPiToolRun(t *testing.T) {
	b, _ := os.ReadFile("../agent/testdata/pi-0.73.1-tool-then-text.jsonl")
	es := entries(t, string(b))
	var got []string
	for _, e := range es {
		got = append(got, e.Kind+":"+e.Tool+":"+e.Text+e.Args)
	}
	want := []string{
		"note::pi session 01a230e8-25f9-70c2-bfbe-728870ffa3e6 in /tmp/pitest",
		"user::Write a note.",
		"assistant::I will write the note.",
		`tool_call:bash:{"command":"echo hello > ~/store/note.txt && echo wrote it"}`,
		"tool_result:bash:wrote it\n",
		"assistant::Done: the note is in the store.",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}

func TestClaudeResultNamesItsTool(t *testing.T) {
	in := `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t9","name":"Read","input":{"path":"a"}}]}}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t9","content":[{"type":"text","text":"no such file"}],"is_error":true}]}}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"unknown","content":"x"}]}}
`
	es := entries(t, in)
	if len(es) != 3 || es[1].Tool != "Read" || !es[1].IsError || es[1].Text != "no such file" || es[2].Tool != "" || es[2].Text != "x" {
		t.Fatalf("%+v", es)
	}
	var out bytes.Buffer
	p := NewPrinter(&out)
	for _, e := range es {
		p.Print(e)
	}
	if !strings.Contains(out.String(), "[failed Read]\n  no such file\n") || !strings.Contains(out.String(), "[result ?]\n  x\n") {
		t.Fatalf("%s", out.String())
	}
}

// A line past MaxLine is one raw entry saying its length; the lines after
// it still decode.
func TestOverlongLine(t *testing.T) {
	in := `{"type":"message_end","message":{"role":"user","content":"` + strings.Repeat("a", MaxLine) + `"}}` + "\n" +
		`{"type":"message_end","message":{"role":"user","content":"after"}}` + "\n"
	es := entries(t, in)
	if len(es) != 2 || es[0].Kind != Raw || !strings.Contains(es[0].Text, "too long to render") ||
		!strings.Contains(es[0].Text, fmt.Sprintf("a line of %d bytes", MaxLine+61)) || es[1].Kind != User || es[1].Text != "after" || es[1].Line != 2 {
		t.Fatalf("%.200v", es)
	}
}

// Lines that are not events (stderr, a partial last line, JSON of another
// shape, a known type with a broken body) pass through as raw.
func TestNonEventsPassThrough(t *testing.T) {
	in := "plain\n{\"type\":\"mystery\"}\n{\"type\":\"message_end\",\"message\":7}\n[1,2]\n\nlast without newline"
	es := entries(t, in)
	var got []string
	for _, e := range es {
		got = append(got, e.Kind+":"+e.Text)
	}
	want := []string{"raw:plain", `raw:{"type":"mystery"}`, `raw:{"type":"message_end","message":7}`, "raw:[1,2]", "raw:", "raw:last without newline"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q", got)
	}
}

// The Writer renders the same whatever the chunks written to it.
func TestWriterMatchesCopy(t *testing.T) {
	b, _ := os.ReadFile("../agent/testdata/live-pi-0.73.1-mid-turn.jsonl")
	var want bytes.Buffer
	if err := Copy(&want, bytes.NewReader(b), "pi", false); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{1, 7, 4096} {
		var got bytes.Buffer
		w := NewWriter(&got, "pi", false)
		for i := 0; i < len(b); i += size {
			w.Write(b[i:min(i+size, len(b))])
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("chunks of %d:\n%s\nwant\n%s", size, got.String(), want.String())
		}
	}
}

func TestCutKeepsCharactersWhole(t *testing.T) {
	s := strings.Repeat("é", 1000) // 2 bytes each
	for _, max := range []int{1, 2, 3, 501} {
		c := cut(s, max, "\n", "")
		if !utf8.ValidString(c) || len(c) > max+40 {
			t.Fatalf("cut at %d: %q", max, c)
		}
	}
	if cut("short", 10, "\n", "x") != "short" {
		t.Fatal("a short text was cut")
	}
	r := cutLines(strings.Repeat("l\n", 30))
	if !strings.HasSuffix(r, "… [18 more lines]") || strings.Count(r, "\n") != 12 {
		t.Fatalf("%q", r)
	}
}

func FuzzReader(f *testing.F) {
	// Seeds: the short lines of two recordings (whole 50 KB files make
	// the fuzzer crawl).
	for _, p := range []string{"pi-0.73.1-tool-then-text", "claude-2.1.197-tool-then-text"} {
		b, _ := os.ReadFile("../agent/testdata/" + p + ".jsonl")
		var seed []byte
		for _, l := range bytes.SplitAfter(b, []byte("\n")) {
			if len(l) < 700 {
				seed = append(seed, l...)
			}
		}
		f.Add(seed)
	}
	f.Add([]byte("{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"content\":[1]}]}}\n\xff"))
	f.Fuzz(func(t *testing.T, in []byte) {
		lines := bytes.Count(in, []byte("\n")) + 1
		r := NewReader(bytes.NewReader(in), "")
		p := NewPrinter(io.Discard)
		last := 0
		for {
			e, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.Line < last || e.Line > lines || e.Kind == "" {
				t.Fatalf("entry %+v after line %d of %d", e, last, lines)
			}
			last = e.Line
			if err := p.Print(e); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// The briefing is shown by its title; any other long prompt is cut.
func TestBriefingByTitle(t *testing.T) {
	var out bytes.Buffer
	p := NewPrinter(&out)
	p.Print(Entry{Kind: User, Text: "# Briefing for dobby, run R\n\n## Your role\n" + strings.Repeat("r", 5000)})
	p.Print(Entry{Kind: User, Text: "hello"})
	want := "[user]\n# Briefing for dobby, run R\n… [the briefing, 5014 more bytes; roster-runs context RUN prints it]\n\n[user]\nhello\n"
	if out.String() != want {
		t.Fatalf("%q", out.String())
	}
}
