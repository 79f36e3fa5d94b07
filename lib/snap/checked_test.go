package snap

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// Prune checks the shape of a manifest again only when its stat moved
// since it last found it sound (.checked.jsonl): a damaged manifest is
// still refused, and nothing pruned; the record is a cache, rebuilt when
// deleted, refused and never overwritten when it cannot be read.
func TestPruneChecksAManifestAgainOnlyWhenItsStatMoved(t *testing.T) {
	needRoot(t)
	w := newWorker(t, t.TempDir())
	o := opts(10)
	var made []string
	for i := 0; i < 3; i++ {
		write(t, filepath.Join(w.Store(), "f"), strings.Repeat("x", i+1), 0o644)
		made = append(made, take(t, w, o).ID)
	}
	checked := filepath.Join(w.Snapshots(), home.SnapChecked)
	known, err := parseChecked(mustRead(t, checked))
	if err != nil || len(known) != 3 {
		t.Fatalf("after three takes %s holds %v (%v), want the three", home.SnapChecked, known, err)
	}
	prune := func() error {
		_, err := Prune(context.Background(), w, 10, o)
		return err
	}

	// A manifest cut short is read again (its size and ctime moved) and
	// refused; the record stays as it was.
	man := w.SnapshotManifest(made[0])
	good := mustRead(t, man)
	before := mustRead(t, checked)
	if err := os.WriteFile(man, good[:len(good)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := prune(); !errors.Is(err, errs.ErrRefused) {
		t.Fatalf("prune with a torn manifest: %v, want a refusal", err)
	}
	if !bytes.Equal(mustRead(t, checked), before) {
		t.Errorf("a refused prune rewrote %s", home.SnapChecked)
	}

	// A record that says the torn manifest, at its present stat, was
	// found sound is believed: the manifest is not read again.
	var st unix.Stat_t
	if err := unix.Stat(man, &st); err != nil {
		t.Fatal(err)
	}
	known[made[0]] = checkedOf(made[0], "", &st)
	lied := encodeChecked([]checkedManifest{known[made[0]], known[made[1]], known[made[2]]})
	if err := os.WriteFile(checked, lied, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := prune(); err != nil {
		t.Fatalf("prune with a record matching every manifest: %v", err)
	}

	// Deleted, the record is rebuilt by checking every manifest: the torn
	// one is refused again.
	os.Remove(checked)
	if err := prune(); !errors.Is(err, errs.ErrRefused) {
		t.Fatalf("prune without a record, a torn manifest: %v, want a refusal", err)
	}
	if err := os.WriteFile(man, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := prune(); err != nil {
		t.Fatalf("prune, every manifest sound: %v", err)
	}
	if known, err := parseChecked(mustRead(t, checked)); err != nil || len(known) != 3 {
		t.Fatalf("rebuilt %s holds %v (%v)", home.SnapChecked, known, err)
	}

	// A record that cannot be read is refused, and left as it is.
	for _, bad := range []string{"not json\n", `{"id":"x"}` + "\n", "{}", strings.Repeat(string(before[:bytes.IndexByte(before, '\n')+1]), 2)} {
		if err := os.WriteFile(checked, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		err := prune()
		if !errors.Is(err, errs.ErrRefused) || !strings.Contains(err.Error(), home.SnapChecked) {
			t.Errorf("prune with %s %q: %v, want a refusal naming it", home.SnapChecked, bad, err)
		}
		if got := string(mustRead(t, checked)); got != bad {
			t.Errorf("a refused %s was overwritten: %q", home.SnapChecked, got)
		}
	}
}

func FuzzParseChecked(f *testing.F) {
	f.Add([]byte(`{"id":"20261201-174121.825","ino":1,"size":2,"mtime":3,"ctime":4,"label":"pre-restore"}` + "\n"))
	f.Add([]byte("{}\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		known, err := parseChecked(data)
		if err != nil {
			return
		}
		var cs []checkedManifest
		for _, c := range known {
			cs = append(cs, c)
		}
		again, err := parseChecked(encodeChecked(cs))
		if err != nil || len(again) != len(known) {
			t.Fatalf("re-parse: %v %v", again, err)
		}
		for id, c := range known {
			if again[id] != c {
				t.Fatalf("round trip of %s: %+v != %+v", id, again[id], c)
			}
		}
	})
}
