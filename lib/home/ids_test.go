package home

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/errs"
)

var at = time.Date(2026, 11, 29, 19, 22, 1, 512_000_000, time.FixedZone("CET", 3600))

func TestRunIDFormIsUTCAndSortsByStart(t *testing.T) {
	id := NewRunID(at)
	if !strings.HasPrefix(id, "2026-11-29-18-22-01-") || !IsRunID(id) || len(id) != len("2026-11-29-18-22-01-xxxx") {
		t.Fatalf("NewRunID = %q", id)
	}
	got, err := RunTime(id)
	if err != nil || !got.Equal(at.Truncate(time.Second)) {
		t.Fatalf("RunTime(%q) = %v, %v", id, got, err)
	}
	later := NewRunID(at.Add(time.Second))
	if !(id < later) {
		t.Fatalf("%q does not sort before %q", id, later)
	}
	if _, err := RunTime("2026-11-29"); err == nil {
		t.Fatal("RunTime accepted a short id")
	}
}

func TestRunIDSuffixIsBase36(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		id := NewRunID(at)
		suffix := id[len(id)-4:]
		if strings.Trim(suffix, "0123456789abcdefghijklmnopqrstuvwxyz") != "" {
			t.Fatalf("suffix %q", suffix)
		}
		seen[suffix] = true
	}
	if len(seen) < 150 {
		t.Fatalf("only %d distinct suffixes of 200", len(seen))
	}
}

func TestTaskIDForms(t *testing.T) {
	id := NewTaskID(at)
	if !strings.HasPrefix(id, "t-2026-11-29-18-22-01-") || !IsTaskID(id) {
		t.Fatalf("NewTaskID = %q", id)
	}
	fired := FiredTaskID(time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC), "dobby", "nightly")
	if fired != "t-2026-11-30-02-00-00-dobby.nightly" || !IsTaskID(fired) {
		t.Fatalf("FiredTaskID = %q", fired)
	}
	for _, s := range []string{"2026-11-29-19-22-01-k3v9", "t-2026-11-29-19-22-01-K3V9", "t-2026-11-29-19-22-01-dobby", "t-x"} {
		if IsTaskID(s) {
			t.Errorf("IsTaskID(%q) = true", s)
		}
	}
}

func TestSnapshotIDForm(t *testing.T) {
	id := NewSnapshotID(at)
	if id != "20261129-182201.512" || !IsSnapshotID(id) {
		t.Fatalf("NewSnapshotID = %q", id)
	}
	back, err := SnapshotTime(id)
	if err != nil || !back.Equal(at) {
		t.Fatalf("SnapshotTime = %v, %v", back, err)
	}
	if IsSnapshotID("20261129-182201") {
		t.Fatal("accepted a snapshot id without milliseconds")
	}
}

func TestResolve(t *testing.T) {
	tasks := []string{"t-2026-11-29-19-22-01-k3v9", "t-2026-11-29-19-22-01-k3vz", "t-2026-11-30-02-00-00-dobby.nightly"}
	runs := []string{"2026-11-29-19-22-03-q8w2", "2026-11-29-19-22-03-q8w3", "2026-12-01-00-00-00-aaaa"}
	for _, c := range []struct {
		what, prefix string
		cands        []string
		want         string
	}{
		{"task", "t-2026-11-29-19-22-01-k3v9", tasks, "t-2026-11-29-19-22-01-k3v9"}, // exact
		{"task", "t-2026-11-30", tasks, "t-2026-11-30-02-00-00-dobby.nightly"},      // unique prefix
		{"task", "2026-11-30", tasks, "t-2026-11-30-02-00-00-dobby.nightly"},        // without "t-"
		{"task", "2026-11-29-19-22-01-k3vz", tasks, "t-2026-11-29-19-22-01-k3vz"},
		{"run", "2026-12", runs, "2026-12-01-00-00-00-aaaa"},
		{"run", "2026-11-29-19-22-03-q8w2", runs, "2026-11-29-19-22-03-q8w2"},
		{"run", "2026-11-29-19-22-03-q8w", []string{"2026-11-29-19-22-03-q8w2", "2026-11-29-19-22-03-q8w2"}, "2026-11-29-19-22-03-q8w2"}, // the same id twice is one
	} {
		got, err := Resolve(c.what, c.prefix, c.cands)
		if err != nil || got != c.want {
			t.Errorf("Resolve(%s, %q) = %q, %v; want %q", c.what, c.prefix, got, err, c.want)
		}
	}
}

func TestResolveExactMatchWinsOverLongerIDs(t *testing.T) {
	got, err := Resolve("run", "abc", []string{"abcd", "abc", "abce"})
	if err != nil || got != "abc" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestResolveAmbiguousListsCandidates(t *testing.T) {
	_, err := Resolve("task", "2026-11-29", []string{"t-2026-11-29-19-22-01-k3vz", "t-2026-11-29-19-22-01-k3v9", "t-2026-11-30-x"})
	var c *errs.Candidates
	if !errors.As(err, &c) || !errors.Is(err, errs.ErrUsage) {
		t.Fatalf("got %v, want an ambiguous prefix (exit 2)", err)
	}
	want := []string{"t-2026-11-29-19-22-01-k3v9", "t-2026-11-29-19-22-01-k3vz"}
	if !reflect.DeepEqual(c.IDs, want) || c.What != "task" || c.Prefix != "2026-11-29" {
		t.Fatalf("candidates %+v, want sorted %v", c, want)
	}
}

func TestResolveNoneIsNotFoundAndEmptyIsUsage(t *testing.T) {
	_, err := Resolve("snapshot", "1999", []string{"20261129-182201.512"})
	if !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("got %v, want not found (exit 12)", err)
	}
	_, err = Resolve("run", "", []string{"x"})
	if !errors.Is(err, errs.ErrUsage) {
		t.Fatalf("empty prefix: %v, want usage", err)
	}
	// "t-" is only left out for tasks.
	if _, err := Resolve("run", "2026", []string{"t-2026-x"}); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("run prefix matched a t- id: %v", err)
	}
}

func TestResolveByRandomSuffix(t *testing.T) {
	tasks := []string{"t-2026-11-29-19-22-01-k3v9", "t-2026-11-30-02-00-00-dobby.nightly", "t-2026-11-29-19-22-02-aaaa"}
	if got, err := Resolve("task", "k3v9", tasks); err != nil || got != tasks[0] {
		t.Fatalf("task by suffix: %q, %v", got, err)
	}
	// A fired task's id ends in WORKER.TEMPLATE: no random suffix to match.
	if _, err := Resolve("task", "ghtly", tasks); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("fired task matched by a tail: %v", err)
	}
	runs := []string{"2026-11-29-19-22-03-q8w2", "dobby/2026-11-29-19-22-04-q8w3"}
	if got, err := Resolve("run", "q8w3", runs); err != nil || got != runs[1] {
		t.Fatalf("run by suffix: %q, %v", got, err)
	}
	// Snapshots have no random part; three characters are no suffix.
	if _, err := Resolve("snapshot", "2.512", []string{"20261129-182202.512"}); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("snapshot by tail: %v", err)
	}
	if _, err := Resolve("run", "8w2", runs); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("a 3-character tail matched: %v", err)
	}
}

func TestResolveSuffixSharedByTwoIsAmbiguous(t *testing.T) {
	ids := []string{"2026-11-29-19-22-03-k3v9", "2026-11-30-01-00-00-k3v9"}
	_, err := Resolve("run", "k3v9", ids)
	var c *errs.Candidates
	if !errors.As(err, &c) || len(c.IDs) != 2 {
		t.Fatalf("got %v, want both candidates", err)
	}
	// A prefix and another id's suffix: both match, so it is ambiguous too.
	ids = []string{"2026-11-29-19-22-03-2026", "2026-11-30-01-00-00-abcd"}
	if _, err := Resolve("run", "2026", ids); !errors.As(err, &c) {
		t.Fatalf("got %v, want ambiguous", err)
	}
}
