package tms

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/outbox"
)

func limitsPartition(t *testing.T) *Partition {
	t.Helper()
	h := newHome(t, "dobby")
	p, err := Open(h, "dobby", Options{Clock: &fakeClock{t: t0}, Org: defaultOrg(t), Worker: &config.Worker{Name: "dobby", Command: []string{"/bin/true"}}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// longestJournalLine is the length of the journal's longest line.
func longestJournalLine(t *testing.T, p *Partition) int {
	t.Helper()
	f, err := os.Open(p.W.Journal())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	longest, n := 0, 0
	for {
		b, err := r.ReadByte()
		if err != nil {
			break
		}
		if b == '\n' {
			longest, n = max(longest, n), 0
			continue
		}
		n++
	}
	return max(longest, n)
}

func TestTaskTextIsBoundedAt64KiB(t *testing.T) {
	p := limitsPartition(t)
	if _, err := p.Add(ctx, NewTask{Text: strings.Repeat("x", MaxText)}); err != nil {
		t.Fatalf("a text of exactly 64 KiB: %v", err)
	}
	for _, c := range []struct {
		name string
		do   func(text string) error
	}{
		{"add", func(s string) error { _, err := p.Add(ctx, NewTask{Text: s}); return err }},
		{"relay", func(s string) error { _, err := p.Relay(ctx, "slack:C1", "ann", s); return err }},
		{"template", func(s string) error {
			_, err := p.AddTemplate(ctx, NewTemplate{ID: "big", Cron: "@daily", Text: s})
			return err
		}},
		{"file action", func(s string) error {
			_, err := p.ApplyAction(ctx, "2026-11-29-19-22-03-q8w2", "", Action{N: 1, Kind: outbox.KindFile, Text: s})
			return err
		}},
	} {
		err := c.do(strings.Repeat("x", MaxText+1))
		if !errors.Is(err, errs.ErrUsage) || !strings.Contains(err.Error(), "64 KiB limit") {
			t.Errorf("%s of 64 KiB + 1: %v", c.name, err)
		}
	}
}

func TestOpenTasksAndTemplatesAreBounded(t *testing.T) {
	p := limitsPartition(t)
	in := schedule(t, p)
	for i := 0; i < MaxOpenTasks+1; i++ {
		in.Tasks = append(in.Tasks, Task{Text: fmt.Sprintf("t%d", i)})
	}
	if _, err := set(t, p, in); err == nil || !strings.Contains(refusals(t, err)[0].Reason, "limit of 10000 per partition") {
		t.Fatalf("a set leaving 10,001 tasks: %v", err)
	}
	in.Tasks = in.Tasks[:MaxOpenTasks]
	if _, err := set(t, p, in); err != nil {
		t.Fatalf("a set leaving 10,000 tasks: %v", err)
	}
	for name, do := range map[string]func() error{
		"add": func() error { _, err := p.Add(ctx, NewTask{Text: "one more"}); return err },
		"file action": func() error {
			_, err := p.ApplyAction(ctx, "2026-11-29-19-22-03-q8w2", "", Action{N: 1, Kind: outbox.KindFile, Text: "one more"})
			return err
		},
	} {
		if err := do(); !errors.Is(err, errs.ErrUsage) || !strings.Contains(err.Error(), "limit of 10000 per partition") {
			t.Errorf("%s at 10,000 open tasks: %v", name, err)
		}
	}
	// A template due now is skipped, not fired, and says why.
	if _, err := p.AddTemplate(ctx, NewTemplate{ID: "tick", Cron: "@every 1m", Text: "tick", Overlap: OverlapAllow}); err != nil {
		t.Fatal(err)
	}
	p.clock.(*fakeClock).Add(2 * time.Minute)
	rep, err := p.FireTemplates(ctx)
	if err != nil || len(rep.Fired) != 0 || rep.Skipped == 0 {
		t.Fatalf("fire at the limit: %+v %v", rep, err)
	}

	q := limitsPartition(t)
	for i := 0; i < MaxTemplates; i++ {
		if _, err := q.AddTemplate(ctx, NewTemplate{ID: fmt.Sprintf("t%d", i), Cron: "@daily", Text: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.AddTemplate(ctx, NewTemplate{ID: "one-more", Cron: "@daily", Text: "x"}); !errors.Is(err, errs.ErrUsage) || !strings.Contains(err.Error(), "limit of 256 per partition") {
		t.Fatalf("template 257: %v", err)
	}
}

// Issue 17: many big filings, then an empty set that cancels them all,
// made one journal line of 41.6 MB. The line is now bounded, the set is
// refused naming the limit, and a smaller one goes through.
func TestOneSetAndOneJournalLineAreBoundedAt4MiB(t *testing.T) {
	p := limitsPartition(t)
	text := strings.Repeat("x", 60000)
	for i := 0; i < 80; i++ { // 80 × 60 kB: a set canceling them all writes over 4 MiB
		if _, err := p.ApplyAction(ctx, "2026-11-29-19-22-03-q8w2", "", Action{N: i + 1, Kind: outbox.KindFile, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	in := schedule(t, p)
	keep := in.Tasks
	in.Tasks = nil
	_, err := set(t, p, in)
	if !errors.Is(err, errs.ErrUsage) || !strings.Contains(err.Error(), "4 MiB limit of one set") {
		t.Fatalf("an empty set canceling 80 × 60 kB: %v", err)
	}
	in.Tasks = keep[:40] // cancel half
	if _, err := set(t, p, in); err != nil {
		t.Fatalf("a set canceling 40: %v", err)
	}
	if n := longestJournalLine(t, p); n > MaxSetBytes {
		t.Fatalf("longest journal line %d bytes", n)
	} else {
		t.Logf("longest journal line: %d bytes", n)
	}
	// The request itself is bounded too.
	in = schedule(t, p)
	in.Tasks = append(in.Tasks, Task{Text: strings.Repeat("y", MaxSetBytes)})
	if _, err := set(t, p, in); !errors.Is(err, errs.ErrUsage) || !strings.Contains(err.Error(), "4 MiB limit of one set") {
		t.Fatalf("a 4 MiB request: %v", err)
	}
}

// Containment, Sizes: 10,000 open tasks of 64 KiB made a 650 MB tasks.json
// that every dispatcher tick read (3.2 GB of RSS in the one host
// dispatcher). The open tasks' text together is bounded at 32 MiB; the
// add (tasks kept encoded), the filing (decoded) and a due template all
// agree on where the bound is, to the byte.
func TestOpenTasksTextIsBoundedAt32MiB(t *testing.T) {
	p := limitsPartition(t)
	mustAdd(t, p, NewTask{Text: "seed"})
	f := mustRead(t, p)
	seed := f.Tasks[0]
	f.Tasks = nil
	for left := MaxOpenText - 10; left > 0; left -= MaxText { // 512 tasks: 32 MiB of text less 10 bytes
		task := cloneTask(seed)
		task.ID = fmt.Sprintf("%s%04d", seed.ID[:len(seed.ID)-4], len(f.Tasks))
		task.Text = strings.Repeat("y", min(MaxText, left))
		f.Tasks = append(f.Tasks, task)
	}
	if err := p.writeViews(f, t0); err != nil {
		t.Fatal(err)
	}
	if b := textBytes(f.Tasks); b != MaxOpenText-10 {
		t.Fatalf("filled %d bytes", b)
	}
	over := func(err error) bool {
		return errors.Is(err, errs.ErrUsage) && strings.Contains(err.Error(), "the limit of 32 MiB per partition")
	}
	if _, err := p.Add(ctx, NewTask{Text: "0123456789a"}); !over(err) {
		t.Fatalf("add of 11 bytes with 10 left: %v", err)
	}
	if _, err := p.Add(ctx, NewTask{Text: "01234"}); err != nil {
		t.Fatalf("add of 5 bytes with 10 left: %v", err)
	}
	file := func(n int, text string) error {
		_, err := p.ApplyAction(ctx, "2026-11-29-19-22-03-q8w2", "", Action{N: n, Kind: outbox.KindFile, Text: text})
		return err
	}
	if err := file(1, "012345"); !over(err) {
		t.Fatalf("filing of 6 bytes with 5 left: %v", err)
	}
	if err := file(2, "01234"); err != nil {
		t.Fatalf("filing of 5 bytes with 5 left: %v", err)
	}
	if _, err := p.AddTemplate(ctx, NewTemplate{ID: "tick", Cron: "@every 1m", Text: "tick", Overlap: OverlapAllow}); err != nil {
		t.Fatal(err)
	}
	p.clock.(*fakeClock).Add(2 * time.Minute)
	rep, err := p.FireTemplates(ctx)
	if err != nil || len(rep.Fired) != 0 || rep.Skipped == 0 {
		t.Fatalf("fire at the limit: %+v %v", rep, err)
	}
	lines, err := p.Journal(0)
	if err != nil {
		t.Fatal(err)
	}
	if l := lines[len(lines)-1]; !strings.Contains(l.Reason, "32 MiB of open tasks' text") {
		t.Fatalf("the skip's line: %+v", l)
	}
}
