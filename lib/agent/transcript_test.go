package agent

import (
	"bytes"
	"strings"
	"testing"
)

// reference filter over whole lines.
func dropUpdates(data []byte) []byte {
	var out []byte
	for _, l := range bytes.SplitAfter(data, []byte("\n")) {
		if !bytes.HasPrefix(l, []byte(piUpdatePrefix)) {
			out = append(out, l...)
		}
	}
	return out
}

func filterInPieces(name string, data []byte, size int) []byte {
	var out bytes.Buffer
	w := TranscriptFilter(name, &out)
	for p := data; len(p) > 0; {
		n := min(size, len(p))
		w.Write(p[:n])
		p = p[n:]
	}
	return out.Bytes()
}

func TestTranscriptFilterLeavesOutPisMessageUpdates(t *testing.T) {
	data := readTestdata(t, "pi-0.73.1-tool-then-text.jsonl")
	want := dropUpdates(data)
	if bytes.Contains(want, []byte(`"message_update"`)) || !bytes.Contains(want, []byte(`"type":"message_end"`)) || len(want) >= len(data) {
		t.Fatalf("the reference is wrong")
	}
	for _, size := range []int{len(data), 1, 5, 23, 24, 25, 4096} {
		if got := filterInPieces("pi", data, size); !bytes.Equal(got, want) {
			t.Errorf("by %d: got %d bytes, want %d", size, len(got), len(want))
		}
	}
	// The record from the filtered stream is the same: message_end has it.
	s := NewStream("pi")
	s.Write(want)
	if r := s.Record(); r.Turns != 2 || r.FinalText != "Done: the note is in the store." {
		t.Errorf("record from the filtered stream %+v", r)
	}
	// Claude's stream, and any other text, pass as they are.
	c := readTestdata(t, "claude-2.1.197-tool-then-text.jsonl")
	if got := filterInPieces("claude", c, 7); !bytes.Equal(got, c) {
		t.Error("claude's stream was changed")
	}
	plain := "npm warn something\n{\"type\":\"message_start\"}\n{\"type\":\"message_updat\n"
	if got := filterInPieces("pi", []byte(plain), 3); string(got) != plain {
		t.Errorf("got %q", got)
	}
}

func FuzzTranscriptFilter(f *testing.F) {
	f.Add([]byte(piUpdatePrefix+`,"x":1}`+"\nkeep\n"), 3)
	f.Add([]byte(`{"type":"message_end"}`+"\n"+strings.Repeat(piUpdatePrefix, 3)+"\n"), 1)
	f.Fuzz(func(t *testing.T, data []byte, size int) {
		if size <= 0 || size > len(data)+1 {
			size = len(data) + 1
		}
		data = append(data, '\n') // whole lines: a torn start of the prefix waits for more
		if got, want := filterInPieces("pi", data, size), dropUpdates(data); !bytes.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}
