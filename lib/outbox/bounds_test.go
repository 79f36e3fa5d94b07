package outbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// padded is a valid complete action of about n bytes (leading spaces).
func padded(n int) []byte {
	a := []byte(`{"format":1,"kind":"complete","summary":"x"}`)
	return append(bytes.Repeat([]byte(" "), n-len(a)), a...)
}

func TestActionBytesPerRunAreBounded(t *testing.T) {
	dir, r := newOutbox(t)
	const each = 1000000
	for i := 1; i <= 20; i++ {
		if err := os.WriteFile(filepath.Join(dir, "new", fmt.Sprintf("%d.json", i)), padded(each), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ok, refused := 0, 0
	for {
		es, err := r.Poll()
		if err != nil {
			t.Fatal(err)
		}
		if len(es) == 0 {
			break
		}
		for _, e := range es {
			switch {
			case e.Err == nil:
				ok++
			case strings.Contains(e.Err.Error(), "over 16 MiB of action files in this run"):
				refused++
			default:
				t.Fatalf("entry %s: %v", e.Name, e.Err)
			}
		}
	}
	if want := MaxActionBytes / each; ok != want || refused != 20-want {
		t.Fatalf("%d read, %d refused by the run's bound; want %d and %d", ok, refused, want, 20-want)
	}
}

func TestTmpIsBoundedAndEmptiedAtTheEnd(t *testing.T) {
	dir, r := newOutbox(t)
	tmp := filepath.Join(dir, "tmp")
	big := bytes.Repeat([]byte("x"), 1<<20)
	for i := 0; i < 20; i++ { // 20 MiB, over the 16 MiB bound
		os.WriteFile(filepath.Join(tmp, fmt.Sprintf("stash-%d", i)), big, 0o644)
	}
	os.Mkdir(filepath.Join(tmp, "folder"), 0o755)
	os.WriteFile(filepath.Join(tmp, "folder", "inside"), big, 0o644)
	os.Symlink("/etc", filepath.Join(tmp, "link"))
	os.WriteFile(filepath.Join(tmp, "7.claim"), nil, 0o644)
	b, err := r.BoundTmp()
	if err != nil {
		t.Fatal(err)
	}
	left, _ := r.listTmp()
	var used int64
	for _, e := range left {
		if !e.plain {
			t.Errorf("%s left in tmp/", e.name)
		}
		used += e.bytes
	}
	if used > MaxTmpBytes || b.Removed < 6 { // the folder, the link and at least 4 MiB of stashes
		t.Fatalf("tmp/ uses %d bytes after BoundTmp (removed %+v)", used, b)
	}
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Fatal("the link was followed")
	}
	if _, err := os.Stat(filepath.Join(tmp, "7.claim")); err != nil {
		t.Fatal("a claim was removed though tmp/ was within its entry bound")
	}
	if _, err := r.EmptyTmp(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Fatalf("tmp/ holds %d entries after EmptyTmp", len(ents))
	}
	if st, err := os.Stat(tmp); err != nil || !st.IsDir() {
		t.Fatal("tmp/ itself must stay")
	}
}

func TestTmpEntriesAreBounded(t *testing.T) {
	dir, r := newOutbox(t)
	for i := 0; i < MaxTmpEntries+100; i++ {
		os.WriteFile(filepath.Join(dir, "tmp", fmt.Sprintf("%d.claim", i+1)), nil, 0o644)
	}
	if _, err := r.BoundTmp(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(ents) != MaxTmpEntries {
		t.Fatalf("tmp/ holds %d entries, want %d", len(ents), MaxTmpEntries)
	}
}
