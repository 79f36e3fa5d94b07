package snap

import (
	"bytes"
	"testing"
)

func TestDropTreeLines(t *testing.T) {
	tree := "channel-stores/chat%201"
	in := ">f+++++++++ channel-stores/chat%201/said.txt\n" +
		"cd+++++++++ channel-stores/chat%201/\n" +
		"*deleting   channel-stores/chat%201/old\n" +
		">f+++++++++ channel-stores/chat%2010/kept\n" +
		">f.st...... store/channel-stores/chat%201/kept too\n" +
		"hf+++++++++ channel-stores/other/b => channel-stores/other/a\n" +
		"skipped channel-stores/chat%201/pipe (fifo)\n"
	want := ">f+++++++++ channel-stores/chat%2010/kept\n" +
		">f.st...... store/channel-stores/chat%201/kept too\n" +
		"hf+++++++++ channel-stores/other/b => channel-stores/other/a\n"
	if got := string(DropTreeLines([]byte(in), tree)); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// FuzzDropTreeLines: whatever names a box gave its files, the lines kept
// are the input's own lines in order, none of them names the tree, and
// every line dropped does.
func FuzzDropTreeLines(f *testing.F) {
	f.Add([]byte(">f+++++++++ channel-stores/c/x\nstore/a\n"), "channel-stores/c")
	f.Add([]byte("unstable channel-stores/c\n\n*deleting   channel-stores/c/\n"), "channel-stores/c")
	f.Fuzz(func(t *testing.T, data []byte, tree string) {
		if tree == "" {
			return
		}
		out := DropTreeLines(data, tree)
		esc := []byte(EscapeName(tree))
		rest := out
		for _, line := range bytes.SplitAfter(data, []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			if bytes.HasPrefix(rest, line) && !namesTree(line, esc) {
				rest = rest[len(line):]
				continue
			}
			if !namesTree(line, esc) {
				t.Fatalf("line %q dropped but does not name %q", line, tree)
			}
		}
		if len(rest) != 0 {
			t.Fatalf("output has %q the input does not", rest)
		}
	})
}
