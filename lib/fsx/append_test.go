package fsx

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fileWith makes a file holding data, opened read-write with O_APPEND.
func fileWith(t testing.TB, data string) *os.File {
	t.Helper()
	p := filepath.Join(t.TempDir(), "j.jsonl")
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func contents(t testing.TB, f *os.File) string {
	t.Helper()
	data, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestAppendLineAddsOneWholeLine(t *testing.T) {
	f := fileWith(t, `{"a":1}`+"\n")
	if err := AppendLine(f, []byte(`{"b":2}`)); err != nil {
		t.Fatal(err)
	}
	if got := contents(t, f); got != "{\"a\":1}\n{\"b\":2}\n" {
		t.Errorf("file %q", got)
	}
	if err := AppendLine(f, []byte("two\nlines")); err == nil {
		t.Error("a line with a newline was appended")
	}
	if got := contents(t, f); got != "{\"a\":1}\n{\"b\":2}\n" {
		t.Errorf("refused append changed the file: %q", got)
	}
}

var big = strings.Repeat("x", 70<<10) // longer than lastNewlineEnd's 64 KiB block

func TestRepairTailDropsOnlyATornLastLine(t *testing.T) {
	for _, c := range []struct {
		name, data, want string
	}{
		{"empty", "", ""},
		{"whole", "a\nb\n", "a\nb\n"},
		{"torn", "a\nb\n{\"c\":", "a\nb\n"},
		{"only torn", "{\"c\":", ""},
		{"empty lines kept", "a\n\n", "a\n\n"},
		{"torn after a long line", "a\n" + big + "\ntorn", "a\n" + big + "\n"},
		{"long torn tail", "a\n" + big, "a\n"},
		{"long torn only", big, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := fileWith(t, c.data)
			n, err := RepairTail(f)
			if err != nil {
				t.Fatal(err)
			}
			if got := contents(t, f); got != c.want {
				t.Errorf("after repair %d bytes, want %d", len(got), len(c.want))
			}
			if n != int64(len(c.data)-len(c.want)) {
				t.Errorf("dropped %d, want %d", n, len(c.data)-len(c.want))
			}
			// The next append starts on a fresh line.
			if err := AppendLine(f, []byte("next")); err != nil {
				t.Fatal(err)
			}
			if got := contents(t, f); got != c.want+"next\n" {
				t.Errorf("append after repair: %q", got)
			}
		})
	}
}

func TestLastLineIgnoresATornTail(t *testing.T) {
	for _, c := range []struct {
		name, data string
		want       *string
	}{
		{"empty", "", nil},
		{"only torn", "abc", nil},
		{"one", "a\n", ptr("a")},
		{"two", "a\nbc\n", ptr("bc")},
		{"torn tail", "a\nbc\n{\"x\"", ptr("bc")},
		{"empty last", "a\n\n", ptr("")},
		{"long last", "a\n" + big + "\n", ptr(big)},
		{"long before", big + "\nz\n", ptr("z")},
		{"long torn", "q\n" + big, ptr("q")},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := LastLine(fileWith(t, c.data))
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.want == nil && got != nil:
				t.Errorf("got %q, want none", got)
			case c.want != nil && (got == nil || string(got) != *c.want):
				t.Errorf("got %.20q (%d bytes), want %.20q", got, len(got), *c.want)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestSplitLinesDropsTornTailAndEmptyLines(t *testing.T) {
	for _, c := range []struct {
		data string
		want []string
	}{
		{"", nil},
		{"a", nil},
		{"a\n", []string{"a"}},
		{"a\nb", []string{"a"}},
		{"a\n\nb\n", []string{"a", "b"}},
		{"\n\n", nil},
		{"{\"x\":1}\n{\"y\":", []string{"{\"x\":1}"}},
	} {
		got := SplitLines([]byte(c.data))
		if len(got) != len(c.want) {
			t.Errorf("SplitLines(%q) = %q, want %q", c.data, got, c.want)
			continue
		}
		for i := range got {
			if string(got[i]) != c.want[i] {
				t.Errorf("SplitLines(%q)[%d] = %q, want %q", c.data, i, got[i], c.want[i])
			}
		}
	}
}

// FuzzJSONLinesTail: SplitLines, LastLine and RepairTail agree on any
// content: the complete lines are those before the last "\n".
func FuzzJSONLinesTail(f *testing.F) {
	for _, s := range []string{"", "a", "a\n", "a\nb", "\n\n", "a\n\nb\n", "{\"x\":1}\n{\"y\":"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		whole := data[:bytes.LastIndexByte(data, '\n')+1]
		var want [][]byte
		for _, l := range bytes.Split(whole, []byte("\n")) {
			if len(l) > 0 {
				want = append(want, l)
			}
		}
		got := SplitLines(data)
		if len(got) != len(want) {
			t.Fatalf("SplitLines: %d lines, want %d", len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("SplitLines line %d: %q, want %q", i, got[i], want[i])
			}
		}
		fl := fileWith(t, string(data))
		last, err := LastLine(fl)
		if err != nil {
			t.Fatal(err)
		}
		if len(whole) == 0 {
			if last != nil {
				t.Fatalf("LastLine %q with no complete line", last)
			}
		} else {
			body := whole[:len(whole)-1]
			wantLast := body[bytes.LastIndexByte(body, '\n')+1:]
			if !bytes.Equal(last, wantLast) {
				t.Fatalf("LastLine %q, want %q", last, wantLast)
			}
		}
		if _, err := RepairTail(fl); err != nil {
			t.Fatal(err)
		}
		if got := contents(t, fl); got != string(whole) {
			t.Fatalf("RepairTail left %q, want %q", got, whole)
		}
	})
}
