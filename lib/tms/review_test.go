package tms

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
)

// corruptLine replaces line n (1-based) of the journal with text.
func corruptLine(t *testing.T, p *Partition, n int, text string) {
	t.Helper()
	data, err := os.ReadFile(p.W.Journal())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	lines[n-1] = text
	if err := os.WriteFile(p.W.Journal(), []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// docs/layout.md: only a torn last line is ignored; any other unparsable line
// is a refusal (14) by every reader of the whole journal, and fsck names
// the line and never points at --rebuild (the journal is the truth).
func TestJournalCorruptMiddleLineIsRefusedWithHint(t *testing.T) {
	p, _ := open(t, newHome(t, "dobby"), "dobby")
	for _, s := range []string{"a", "b", "c"} {
		mustAdd(t, p, NewTask{Text: s})
	}
	corruptLine(t, p, 2, "{garbage")
	for name, f := range map[string]func() error{
		"journal":  func() error { _, err := p.Journal(0); return err },
		"finished": func() error { _, err := p.Finished(); return err },
		"rebuild":  func() error { _, err := p.Rebuild(ctx); return err },
	} {
		err := f()
		if !errors.Is(err, errs.ErrRefused) || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%s: %v; want 14 naming line 2", name, err)
		}
		if h := errs.HintOf(err); !strings.Contains(h, "by hand") || strings.Contains(h, "--rebuild") {
			t.Errorf("%s: hint %q; want repair by hand, not --rebuild", name, h)
		}
	}
	r, err := p.Fsck(ctx)
	if err != nil || r.BadLine != 2 || !r.JournalProblem {
		t.Fatalf("fsck: %+v, %v; want BadLine 2", r, err)
	}
}

// A corrupt tasks.json's refusal points at fsck and at --rebuild (the
// journal can rebuild it).
func TestCorruptTasksFileHintsAtRebuild(t *testing.T) {
	p, _ := open(t, newHome(t, "dobby"), "dobby")
	mustAdd(t, p, NewTask{Text: "a"})
	os.WriteFile(p.W.TasksFile(), []byte(`{"format":1,"version":1,"tasks":[{`), 0o600)
	_, err := p.Add(ctx, NewTask{Text: "b"})
	if !errors.Is(err, errs.ErrRefused) {
		t.Fatalf("add over corrupt tasks.json: %v", err)
	}
	if h := errs.HintOf(err); !strings.Contains(h, "roster-task fsck dobby") || !strings.Contains(h, "fsck --rebuild dobby") {
		t.Fatalf("hint %q", h)
	}
}

// With no --worker, an id found in no readable partition is not "not
// found" when some partition could not be read (the id could live
// there): it is that worker's refusal (14), naming the worker and file.
func TestFindTaskNotFoundWithUnreadablePartitionIsRefused(t *testing.T) {
	h := newHome(t, "dobby", "winky")
	p, _ := open(t, h, "dobby")
	mustAdd(t, p, NewTask{Text: "a"})
	w, _ := open(t, h, "winky")
	mustAdd(t, w, NewTask{Text: "b"})
	os.WriteFile(w.W.TasksFile(), []byte("{bad"), 0o600)
	for _, fin := range []bool{false, true} {
		_, skipped, err := FindTask(ctx, h, "", "t-1999", fin)
		if !errors.Is(err, errs.ErrRefused) || !strings.Contains(err.Error(), "worker winky") || !strings.Contains(err.Error(), "tasks.json") {
			t.Fatalf("finished=%v: %v; want 14 naming winky's tasks.json", fin, err)
		}
		if len(skipped) != 1 || !errors.Is(err, skipped[0]) {
			t.Fatalf("skipped = %v", skipped)
		}
	}
}

// docs/tools.md: 13 is "a state change that the current state forbids":
// canceling a finished task, or resolving a gate of one, names its state.
func TestCancelOrResolveFinishedTaskConflicts(t *testing.T) {
	p, _ := open(t, newHome(t, "dobby"), "dobby")
	a := mustAdd(t, p, NewTask{Text: "a"})
	if _, err := p.Cancel(ctx, a.ID, "", ByOwner); err != nil {
		t.Fatal(err)
	}
	_, err := p.Cancel(ctx, a.ID, "", ByOwner)
	if !errors.Is(err, errs.ErrConflict) || !strings.Contains(err.Error(), "canceled") {
		t.Fatalf("cancel twice: %v; want 13 naming canceled", err)
	}
	_, err = p.ResolveGate(ctx, a.ID, "g1", "approve", "")
	if !errors.Is(err, errs.ErrConflict) || !strings.Contains(err.Error(), "canceled") {
		t.Fatalf("resolve on a finished task: %v; want 13", err)
	}
	if _, err := p.Cancel(ctx, "t-1999-01-01-00-00-00-none", "", ByOwner); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("unknown id: %v; want 12", err)
	}
}

// A paused worker's pending tasks are held (dispatch claims nothing for
// it), never shown as due or claimable.
func TestPausedWorkerTasksAreHeld(t *testing.T) {
	h := newHome(t, "dobby")
	p, err := Open(h, "dobby", Options{Clock: &fakeClock{t: t0}, Org: defaultOrg(t), Worker: &config.Worker{Name: "dobby", Command: []string{"/bin/true"}, Paused: true}})
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, p, NewTask{Text: "a"})
	r, err := p.Due(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Claimable) != 0 || r.Entries[0].Status != StateHeld || r.Entries[0].Why != "held: worker paused" {
		t.Fatalf("paused: claimable %d, entry %+v", len(r.Claimable), r.Entries[0].Eligibility)
	}
}

// A tasks.json entry with a value none of its field's (state "weird",
// standing "boss") is refused with 14 naming the entry and the field,
// by readers and by add's raw path alike, never silently dropped.
func TestTasksFileWithUnknownFieldValueIsRefused(t *testing.T) {
	for _, c := range []struct{ from, to, field string }{
		{`"state":"pending"`, `"state":"weird"`, "state"},
		{`"standing":"owner"`, `"standing":"boss"`, "standing"},
		{`"kind":"filed"`, `"kind":"chore"`, "kind"},
		{`"by":"owner"`, `"by":"nobody"`, "by"},
	} {
		p, _ := open(t, newHome(t, "dobby"), "dobby")
		a := mustAdd(t, p, NewTask{Text: "a"})
		data, _ := os.ReadFile(p.W.TasksFile())
		bad := strings.Replace(string(data), c.from, c.to, 1)
		if bad == string(data) {
			t.Fatalf("%s not in %s", c.from, data)
		}
		os.WriteFile(p.W.TasksFile(), []byte(bad), 0o600)
		_, rerr := p.Due(ctx)
		_, aerr := p.Add(ctx, NewTask{Text: "b"})
		for name, err := range map[string]error{"due": rerr, "add": aerr} {
			if !errors.Is(err, errs.ErrRefused) || !strings.Contains(err.Error(), "task "+a.ID+": "+c.field) {
				t.Errorf("%s with %s: %v; want 14 naming the task and %s", name, c.to, err, c.field)
			}
		}
		if after, _ := os.ReadFile(p.W.TasksFile()); string(after) != bad {
			t.Errorf("%s: the refused file was changed", c.to)
		}
	}
}

// --at "YYYY-MM-DD HH:MM" follows the template rules for daylight saving:
// a wall time in a spring-forward gap is the first instant after the gap;
// one in a fall-back overlap is its first occurrence.
func TestAtLocalTimeInGapIsFirstInstantAfterGap(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip(err)
	}
	for _, c := range []struct{ in, want string }{
		{"2027-03-14 02:30", "2027-03-14T07:00:00Z"}, // 03:00 EDT
		{"2027-11-07 01:30", "2027-11-07T05:30:00Z"}, // 01:30 EDT, the first
		{"2027-06-01 12:00", "2027-06-01T16:00:00Z"},
	} {
		got, err := ParseAt(c.in, t0, ny)
		if err != nil || got.Format(time.RFC3339) != c.want {
			t.Errorf("%s: %v, %v; want %s", c.in, got, err, c.want)
		}
	}
}

// A spec that can never fire, and a zero window, are refused (exit 2)
// when a template is made, not accepted silently.
func TestTemplateThatNeverFiresIsRefused(t *testing.T) {
	p, _ := open(t, newHome(t, "dobby"), "dobby")
	_, err := p.AddTemplate(ctx, NewTemplate{ID: "never", Cron: "0 0 30 2 *", Text: "x"})
	if !errors.Is(err, errs.ErrUsage) || !strings.Contains(err.Error(), "never fires") {
		t.Fatalf("0 0 30 2 *: %v; want exit 2 never fires", err)
	}
	if _, _, err := PreviewTemplate("0 0 31 4 *", t0, 3, time.UTC); !errors.Is(err, errs.ErrUsage) {
		t.Fatalf("preview of 31 April: %v", err)
	}
	_, err = p.AddTemplate(ctx, NewTemplate{ID: "zero", Cron: "@daily", Text: "x", Window: "0s"})
	if !errors.Is(err, errs.ErrUsage) || !strings.Contains(err.Error(), "more than 0") {
		t.Fatalf("window 0s: %v; want exit 2", err)
	}
	if _, err := p.AddTemplate(ctx, NewTemplate{ID: "leap", Cron: "0 0 29 2 *", Text: "x"}); err != nil {
		t.Fatalf("29 February fires every four years: %v", err)
	}
}
