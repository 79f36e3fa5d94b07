package home

import (
	"errors"
	"os"
	"testing"

	"github.com/roster-sh/roster/lib/errs"
)

func TestExistingWorker(t *testing.T) {
	h := Home{Dir: t.TempDir()}
	if _, err := h.ExistingWorker("Bad/Name"); !errors.Is(err, errs.ErrUsage) {
		t.Errorf("bad name: %v, want usage (2)", err)
	}
	if _, err := h.ExistingWorker("dobby"); !errors.Is(err, errs.ErrNoHome) || errs.HintOf(err) == "" {
		t.Errorf("missing worker: %v, want no-home (10) with a hint", err)
	}
	if err := os.MkdirAll(h.Worker("dobby").Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if w, err := h.ExistingWorker("dobby"); err != nil || w.Name != "dobby" {
		t.Errorf("existing worker: %v, %v", w, err)
	}
}
