package box

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

func TestRunFolderIsCreatedExclusively(t *testing.T) {
	runs := t.TempDir()
	dir := filepath.Join(runs, "2026-11-29-19-22-03-q8w2")
	if err := CreateRunDir(dir, false); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(home.RunJSON(dir), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, fromDispatcher := range []bool{false, true} {
		if err := CreateRunDir(dir, fromDispatcher); !errors.Is(err, errs.ErrConflict) {
			t.Fatalf("existing run (dispatcher %v): %v, want a conflict", fromDispatcher, err)
		}
	}
	if data, _ := os.ReadFile(home.RunJSON(dir)); string(data) != "{}" {
		t.Fatalf("run.json touched: %q", data)
	}
}

func TestRunFolderOfTheDispatchersStartIsAcceptedOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "2026-11-29-19-22-03-q8w2")
	os.Mkdir(dir, 0o755)
	os.WriteFile(home.SupervisorLog(dir), nil, 0o644)
	if err := CreateRunDir(dir, false); !errors.Is(err, errs.ErrConflict) {
		t.Fatalf("ad hoc into the dispatcher's folder: %v, want a conflict", err)
	}
	if err := CreateRunDir(dir, true); err != nil {
		t.Fatalf("the dispatcher's start: %v", err)
	}
	if err := CreateRunDir(dir, true); !errors.Is(err, errs.ErrConflict) {
		t.Fatalf("a second supervisor with the same id: %v, want a conflict", err)
	}
}

func TestRunIDInTheFutureIsRefused(t *testing.T) {
	now := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	for id, ok := range map[string]bool{
		"2026-11-29-19-00-00-abcd": true,
		"2026-11-29-18-00-00-abcd": true,
		"2026-11-29-19-04-59-abcd": true,
		"2026-11-29-19-05-01-abcd": false,
		"2027-01-01-00-00-00-abcd": false,
		"2026-13-01-00-00-00-abcd": false,
		"nonsense":                 false,
	} {
		err := CheckRunID(id, now)
		if (err == nil) != ok || (err != nil && !errors.Is(err, errs.ErrUsage)) {
			t.Errorf("CheckRunID(%s) = %v, want ok %v", id, err, ok)
		}
	}
}
