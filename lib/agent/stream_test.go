package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The testdata streams are real: captured from pi 0.73.1 and Claude Code
// 2.1.197 run against lib/fakemodel with a two-turn script (a bash tool
// call, then a final text), and with a wrong key (401).
func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestStreamRecordFromRealStreams(t *testing.T) {
	for _, tc := range []struct {
		file, agent, stop, text, err, session string
		turns                                 int
		cost                                  float64
	}{
		{"pi-0.73.1-tool-then-text.jsonl", "pi", "stop", "Done: the note is in the store.", "", "01a230e8-25f9-70c2-bfbe-728870ffa3e6", 2, 0.00162},
		{"pi-0.73.1-401.jsonl", "pi", "error", "", "401 {\"error\"", "01a230e8-5af9-75b6-a45b-b6768f1d254d", 1, 0},
		{"claude-2.1.197-tool-then-text.jsonl", "claude", "end_turn", "Done: the note is in the store.", "", "113c219d-a8ec-4966-9aab-4dd7a13e9eed", 2, 0.0027},
		{"claude-2.1.197-401.jsonl", "claude", "stop_sequence", "Invalid API key · Fix external API key", "Invalid API key", "483faa53-1478-42a8-a472-af2dc8b64b60", 1, 0},
	} {
		data := readTestdata(t, tc.file)
		// Whole, and in odd pieces: the record must not depend on how the
		// bytes arrive.
		for _, size := range []int{len(data), 1, 7, 4096} {
			s := NewStream(tc.agent)
			for p := data; len(p) > 0; {
				n := min(size, len(p))
				s.Write(p[:n])
				p = p[n:]
			}
			r := s.Record()
			if r.Name != tc.agent || r.Turns != tc.turns || r.StopReason != tc.stop || r.FinalText != tc.text {
				t.Errorf("%s by %d: record %+v", tc.file, size, r)
			}
			if r.CostUSD == nil || *r.CostUSD < tc.cost-1e-9 || *r.CostUSD > tc.cost+1e-9 {
				t.Errorf("%s: cost %v, want %v", tc.file, r.CostUSD, tc.cost)
			}
			if !strings.HasPrefix(s.Error(), tc.err) || (tc.err == "") != (s.Error() == "") {
				t.Errorf("%s: error %q, want %q...", tc.file, s.Error(), tc.err)
			}
			if s.SessionID() != tc.session {
				t.Errorf("%s: session %q", tc.file, s.SessionID())
			}
		}
	}
}

func TestStreamDropsOverlongLinesAndKeepsGoing(t *testing.T) {
	s := NewStream("pi")
	huge := `{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"` + strings.Repeat("x", MaxLine) + `"}],"stopReason":"stop"}}`
	s.Write([]byte(huge + "\n"))
	s.Write([]byte(`{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"short"}],"stopReason":"stop"}}` + "\n"))
	if r := s.Record(); r.Turns != 1 || r.FinalText != "short" {
		t.Errorf("record %+v", r)
	}
}

func TestStreamFinalTextBounded(t *testing.T) {
	s := NewStream("pi")
	long := strings.Repeat("é", MaxFinalText) // 2 bytes a rune: cut on a boundary
	s.Write([]byte(`{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"` + long + "\"}]}}\n"))
	r := s.Record()
	if len(r.FinalText) > MaxFinalText || !strings.HasPrefix(long, r.FinalText) || len(r.FinalText) < MaxFinalText-1 {
		t.Errorf("final text %d bytes", len(r.FinalText))
	}
}

func TestStreamIgnoresTornLastLineAndJunk(t *testing.T) {
	data := readTestdata(t, "pi-0.73.1-tool-then-text.jsonl")
	lines := bytes.SplitAfter(data, []byte("\n"))
	// Everything up to the first assistant message_end, then junk, then the
	// second message_end cut in half.
	var first, second int
	for i, l := range lines {
		if bytes.Contains(l, []byte(`"type":"message_end","message":{"role":"assistant"`)) {
			if first == 0 {
				first = i
			} else {
				second = i
			}
		}
	}
	s := NewStream("pi")
	for _, l := range lines[:first+1] {
		s.Write(l)
	}
	s.Write([]byte("not json\n\x00\xff{\n{\"type\":7}\n[]\n"))
	s.Write(lines[second][:len(lines[second])/2])
	r := s.Record()
	if r.Turns != 1 || r.StopReason != "toolUse" || r.FinalText != "I will write the note." {
		t.Errorf("record %+v", r)
	}
}

func FuzzStream(f *testing.F) {
	for _, n := range []string{"pi-0.73.1-tool-then-text.jsonl", "pi-0.73.1-401.jsonl", "claude-2.1.197-tool-then-text.jsonl", "claude-2.1.197-401.jsonl"} {
		data := readTestdata(f, n)
		agent := n[:strings.IndexByte(n, '-')]
		for _, l := range bytes.SplitAfter(data, []byte("\n")) {
			if len(l) < 4096 {
				f.Add(agent == "pi", l)
			}
		}
	}
	f.Fuzz(func(t *testing.T, pi bool, data []byte) {
		name := "claude"
		if pi {
			name = "pi"
		}
		s := NewStream(name)
		s.Write(data)
		s.Write([]byte("\n"))
		r := s.Record()
		if len(r.FinalText) > MaxFinalText || len(s.Error()) > MaxFinalText || len(r.StopReason) > 64 || len(s.SessionID()) > 128 {
			t.Fatalf("unbounded record %+v", r)
		}
		if r.Turns < 0 {
			t.Fatalf("turns %d", r.Turns)
		}
	})
}
