package runs

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

func TestLiveBoxesStrictRefusesAnUnreadableBoxJSON(t *testing.T) {
	w := home.Home{Dir: t.TempDir()}.Worker("dobby")
	run := w.Run("2026-11-29-19-22-03-q8w2")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := SelfBoxInfo("dobby", "2026-11-29-19-22-03-q8w2", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteBoxInfo(run, self); err != nil {
		t.Fatal(err)
	}
	if live, err := LiveBoxesStrict(w); err != nil || len(live) != 1 {
		t.Fatalf("a live supervisor: %v, %v", live, err)
	}
	os.WriteFile(home.BoxJSON(run), []byte("{bad"), 0o644)
	if _, err := LiveBoxesStrict(w); !errors.Is(err, errs.ErrRefused) {
		t.Fatalf("unreadable box.json: %v, want a refusal", err)
	}
	if live, err := LiveBoxes(w); err != nil || len(live) != 0 {
		t.Fatalf("LiveBoxes keeps its lenient rule: %v, %v", live, err)
	}
}
