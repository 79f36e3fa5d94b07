package box

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTranscriptIsCappedWithOneLineSayingWhatWasDropped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "transcript.log")
	tr, err := newTranscript(path, 10)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if n, err := tr.Write([]byte("0123456")); n != 7 || err != nil {
			t.Fatalf("Write = %d, %v; the box's output must never be refused", n, err)
		}
	}
	tr.Close()
	data, _ := os.ReadFile(path)
	want := "0123456012\nroster-box: transcript capped at 10 bytes; 11 more bytes dropped\n"
	if string(data) != want {
		t.Fatalf("transcript %q, want %q", data, want)
	}
}

func TestTranscriptUnderTheCapHasNoNote(t *testing.T) {
	path := filepath.Join(t.TempDir(), "transcript.log")
	tr, _ := newTranscript(path, 0)
	tr.Write([]byte("hello\n"))
	tr.Close()
	data, _ := os.ReadFile(path)
	if string(data) != "hello\n" || strings.Contains(string(data), "capped") {
		t.Fatalf("transcript %q", data)
	}
}
