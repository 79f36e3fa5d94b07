package tms

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
)

func TestRollForwardWhenJournalIsAheadOfTasksJSON(t *testing.T) {
	p, _ := open(t, newHome(t, "dobby"), "dobby")
	a := mustAdd(t, p, NewTask{Text: "a"})
	// A crash after the journal append and before the replace: append a
	// filed line by hand, leave tasks.json at version 1.
	b := a
	b.ID = "t-2026-11-29-19-22-01-zzzz"
	b.Text = "landed before the kill"
	line, _ := json.Marshal(Line{Seq: 2, Version: 2, At: t0, Event: EvFiled, Task: b.ID, By: ByOwner, Records: []Record{{Task: &b}}})
	j, _ := os.OpenFile(p.W.Journal(), os.O_APPEND|os.O_WRONLY, 0)
	fsx.AppendLine(j, line)
	j.Close()
	f := mustRead(t, p)
	if f.Version != 2 || f.Task(b.ID) == nil {
		t.Fatalf("not rolled forward: %+v", f)
	}
	c := mustAdd(t, p, NewTask{Text: "c"})
	j2 := mustJournal(t, p)
	if last := j2[len(j2)-1]; last.Seq != 3 || last.Version != 3 || last.Task != c.ID {
		t.Fatalf("next line = %+v", last)
	}
	mustClean(t, p)
}

func TestTornJournalTailIsTruncatedByNextWriter(t *testing.T) {
	p, _ := open(t, newHome(t, "dobby"), "dobby")
	mustAdd(t, p, NewTask{Text: "a"})
	j, _ := os.OpenFile(p.W.Journal(), os.O_APPEND|os.O_WRONLY, 0)
	j.WriteString(`{"seq":2,"version":2,"at":"2026-`)
	j.Close()
	r, _ := p.Fsck(ctx)
	if !r.Clean() || len(r.Notes) == 0 {
		t.Fatalf("fsck with torn tail: %+v", r)
	}
	mustAdd(t, p, NewTask{Text: "b"})
	data, _ := os.ReadFile(p.W.Journal())
	if bytes.Contains(data, []byte(`"at":"2026-{`)) || len(fsx.SplitLines(data)) != 2 || data[len(data)-1] != '\n' {
		t.Fatalf("journal = %s", data)
	}
	mustClean(t, p)
}

func TestAddReadsOnlyTheJournalTail(t *testing.T) {
	p, _ := open(t, newHome(t, "dobby"), "dobby")
	for i := 0; i < 3; i++ {
		mustAdd(t, p, NewTask{Text: "x"})
	}
	// Spoil the first line in place (same length): a reader of the whole
	// journal would refuse it; add never reads it.
	data, _ := os.ReadFile(p.W.Journal())
	i := bytes.IndexByte(data, '\n')
	copy(data[:i], bytes.Repeat([]byte("#"), i))
	os.WriteFile(p.W.Journal(), data, 0o600)
	if _, err := p.Add(ctx, NewTask{Text: "y"}); err != nil {
		t.Fatalf("add read the whole journal: %v", err)
	}
	if r, _ := p.Fsck(ctx); r.Clean() {
		t.Fatal("fsck missed the spoiled line")
	}
}

func TestCorruptTasksJSONIsRefusedAndLeftUntouched(t *testing.T) {
	for name, content := range map[string]string{
		"corrupt":        `{"format":1,"version":3,"tasks":[{"id":`,
		"unknown format": `{"format":2,"version":3,"tasks":[],"templates":[]}`,
		"no format":      `{"version":3}`,
		"wrong type":     `{"format":1,"version":3,"tasks":[{"id":"t-a","priority":"high"}],"templates":[]}`,
		"bad time":       `{"format":1,"version":3,"tasks":[{"id":"t-a","created_at":"noon"}],"templates":[]}`,
		"duplicate id":   `{"format":1,"version":3,"tasks":[{"id":"t-a"},{"id":"t-a"}],"templates":[]}`,
		"no id":          `{"format":1,"version":3,"tasks":[{"text":"x"}],"templates":[]}`,
		"negative":       `{"format":1,"version":-3,"tasks":[],"templates":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			p, _ := open(t, newHome(t, "dobby"), "dobby")
			a := mustAdd(t, p, NewTask{Text: "a"})
			os.WriteFile(p.W.TasksFile(), []byte(content), 0o600)
			calls := map[string]func() error{
				"add":    func() error { _, err := p.Add(ctx, NewTask{Text: "b"}); return err },
				"due":    func() error { _, err := p.Due(ctx); return err },
				"cancel": func() error { _, err := p.Cancel(ctx, a.ID, "", ByOwner); return err },
				"fire":   func() error { _, err := p.FireTemplates(ctx); return err },
				"set":    func() error { v := int64(1); _, err := p.SetTasks(ctx, &SetInput{Version: &v}, ByOwner); return err },
			}
			for what, call := range calls {
				err := call()
				if !errors.Is(err, errs.ErrRefused) || !strings.Contains(err.Error(), p.W.TasksFile()) {
					t.Errorf("%s: %v", what, err)
				}
			}
			if got, _ := os.ReadFile(p.W.TasksFile()); string(got) != content {
				t.Fatal("tasks.json was touched")
			}
		})
	}
}

// tasks.json is read while the journal's tail is found (begin), but a
// journal that would be repaired or made waits for tasks.json: a refused
// tasks.json leaves a torn journal torn and a missing one missing, and is
// the refusal named even when the journal's last line is corrupt too.
func TestRefusedTasksJSONLeavesTheJournalAsItWas(t *testing.T) {
	for name, tail := range map[string]string{
		"torn":    `{"seq":2,"version":2,"at":"2026-`,
		"corrupt": "{\"seq\":2,nonsense}\n",
		"missing": "",
	} {
		t.Run(name, func(t *testing.T) {
			p, _ := open(t, newHome(t, "dobby"), "dobby")
			mustAdd(t, p, NewTask{Text: "a"})
			os.WriteFile(p.W.TasksFile(), []byte(`{"format":1,"version":1,"tasks":[{"id":`), 0o600)
			if name == "missing" {
				os.Remove(p.W.Journal())
			} else {
				j, _ := os.OpenFile(p.W.Journal(), os.O_APPEND|os.O_WRONLY, 0)
				j.WriteString(tail)
				j.Close()
			}
			before, beforeErr := os.ReadFile(p.W.Journal())
			_, err := p.Add(ctx, NewTask{Text: "b"})
			if !errors.Is(err, errs.ErrRefused) || !strings.Contains(err.Error(), p.W.TasksFile()) {
				t.Fatalf("add: %v", err)
			}
			after, afterErr := os.ReadFile(p.W.Journal())
			if !bytes.Equal(before, after) || (beforeErr == nil) != (afterErr == nil) {
				t.Fatalf("journal was touched: %q (%v), now %q (%v)", before, beforeErr, after, afterErr)
			}
		})
	}
}

func TestRebuildRestoresDeletedTasksJSON(t *testing.T) {
	p, c := open(t, newHome(t, "dobby"), "dobby")
	a := mustAdd(t, p, NewTask{Text: "a"})
	b := mustAdd(t, p, NewTask{Text: "b", After: []string{a.ID}})
	run := claim(t, p, a.ID)
	p.Attest(ctx, a.ID, run, good)
	p.AddTemplate(ctx, NewTemplate{ID: "nightly", Cron: "0 2 * * *", Text: "n"})
	c.Add(48 * time.Hour)
	p.FireTemplates(ctx)
	in := schedule(t, p)
	for i := range in.Tasks {
		if in.Tasks[i].ID == b.ID {
			in.Tasks[i].Priority = 4
		}
	}
	if _, err := p.SetTasks(ctx, in, ByOwner); err != nil {
		t.Fatal(err)
	}
	want := mustRead(t, p)
	os.Remove(p.W.TasksFile())
	v, err := p.Rebuild(ctx)
	if err != nil || v != want.Version {
		t.Fatalf("rebuild = %d, %v", v, err)
	}
	got, _ := readFile(p.W.TasksFile())
	if d := diffFiles(want, got); d != "" || got.Version != want.Version {
		t.Fatalf("rebuilt partition differs: %s", d)
	}
	mustClean(t, p)
}

func TestFsckNotesClaimWithoutRunFolder(t *testing.T) {
	p, _ := open(t, newHome(t, "dobby"), "dobby")
	a := mustAdd(t, p, NewTask{Text: "a"})
	run := claim(t, p, a.ID)
	os.RemoveAll(p.W.Run(run))
	// A dispatcher killed between its claim and the box's start leaves
	// this; its next tick reclaims it: a note, not a problem.
	r, _ := p.Fsck(ctx)
	if !r.Clean() || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "which has no run folder (its box never started)") {
		t.Fatalf("fsck = %+v", r)
	}
}

func TestParseAtForms(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	ny, _ := time.LoadLocation("America/New_York")
	cases := []struct {
		in   string
		want time.Time
	}{
		{"2026-11-30T08:00:00Z", time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)},
		{"2026-11-30T08:00:00+01:00", time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)},
		{"2026-01-15 09:30", time.Date(2026, 1, 15, 14, 30, 0, 0, time.UTC)},
		{"+2h", now.Add(2 * time.Hour)},
		{"+90m", now.Add(90 * time.Minute)},
		{"2020-01-01T00:00:00Z", time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)}, // the past is allowed
	}
	for _, c := range cases {
		got, err := ParseAt(c.in, now, ny)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("%q = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "tomorrow", "+", "+-1h", "2026-13-01 10:00", "+1x"} {
		if _, err := ParseAt(bad, now, ny); !errors.Is(err, errs.ErrUsage) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func FuzzParseAt(f *testing.F) {
	for _, s := range []string{"+2h", "2026-11-30T08:00:00Z", "2026-01-15 09:30", "+", "x"} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseAt(s, now, time.UTC)
		if err == nil && got.Location() != time.UTC {
			t.Fatalf("%q: not UTC", s)
		}
	})
}

func FuzzDecodeFile(f *testing.F) {
	f.Add([]byte(`{"format":1,"version":2,"tasks":[{"id":"t-1","text":"x","kind":"filed","standing":"owner","state":"pending","created_at":"2026-01-01T00:00:00Z","priority":0,"by":"owner","attempts":0}],"templates":[]}`))
	f.Add([]byte(`{"format":2}`))
	f.Add([]byte(`{"format":1,"tasks":[{"id":"a"},{"id":"a"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := DecodeFile("tasks.json", data)
		if err != nil {
			if !errors.Is(err, errs.ErrRefused) {
				t.Fatalf("error of the wrong kind: %v", err)
			}
			return
		}
		// Whatever decodes must encode and decode to the same partition.
		again, err := DecodeFile("again", encodeFile(file, "", time.Time{}))
		if err != nil || diffFiles(file, again) != "" {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzDecodeLine(f *testing.F) {
	f.Add([]byte(`{"seq":1,"version":1,"at":"2026-01-01T00:00:00Z","event":"filed","task":"t-1","by":"owner","records":[{"entry":"task","id":"t-1","text":"x"}]}`))
	f.Add([]byte(`{"seq":2,"event":"action","by":"worker","action":{"n":1,"kind":"set","outcome":"refused: x"}}`))
	f.Add([]byte(`{"seq":3,"version":2,"event":"set","records":[{"entry":"template","removed":true,"id":"n"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := DecodeLine(data)
		if err != nil {
			return
		}
		out, err := json.Marshal(l)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		if _, err := DecodeLine(out); err != nil {
			t.Fatalf("re-decode %s: %v", out, err)
		}
	})
}

func FuzzDecodeSet(f *testing.F) {
	f.Add([]byte(`{"version":3,"tasks":[{"text":"new"}],"templates":[{"id":"n","cron":"@daily","text":"x"}]}`))
	f.Add([]byte(`{"format":1,"version":0,"worker":"w","now":"2026-01-01T00:00:00Z","tasks":[],"templates":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := DecodeSet(data); err != nil && !errors.Is(err, errs.ErrUsage) {
			t.Fatalf("error of the wrong kind: %v", err)
		}
	})
}
