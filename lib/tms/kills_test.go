package tms

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/outbox"
	"github.com/roster-sh/roster/lib/runs"
)

// Kill -9 at random instants for each writer of the partition: a helper
// process (this test binary, TMS_HELPER=k-MODE) does one kind of change
// over and over, printing each id once the change returned; the test
// kills it after a random few milliseconds, checks everything, and starts
// another. What is checked after every kill: tasks.json and the view
// parse, every journal line but a torn last one parses, fsck is clean (a
// journal ahead of tasks.json is only a note), no task id is in tasks.json
// twice, every task of the set is in exactly one of its allowed states
// (none lost, none finished twice), and every change the helper printed
// is there.

// fireStart is the fake clock's start for the template-firing writer.
var fireStart = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

type stepClock struct{ t time.Time }

func (c *stepClock) Now() time.Time { return c.t }

// killHelper runs one writer until it has nothing left to do (exit 0).
func killHelper(mode string) int {
	h, err := home.Open(os.Getenv("TMS_HOME"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	org, _ := config.ParseOrg("org.toml", nil)
	clk := &stepClock{t: time.Now()}
	p, err := Open(h, "dobby", Options{Org: org, Worker: &config.Worker{Name: "dobby"}, Clock: clk})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out := bufio.NewWriter(os.Stdout)
	say := func(s string) { fmt.Fprintln(out, s); out.Flush() }
	fail := func(err error) int { fmt.Fprintln(os.Stderr, mode+":", err); return 1 }
	for i := 0; i < 100000; i++ {
		f, err := p.Read(ctx)
		if err != nil {
			return fail(err)
		}
		if mode == "fire" {
			// One activation due each time: the first at fireStart.
			clk.t = fireStart.Add(time.Second)
			if c := f.Template("tick").Cursor; c != nil {
				clk.t = c.Add(time.Minute + time.Second)
			}
			rep, err := p.FireTemplates(ctx)
			if err != nil {
				return fail(err)
			}
			for _, id := range rep.Fired {
				say(id)
			}
			continue
		}
		var task *Task
		for k := range f.Tasks {
			t := &f.Tasks[k]
			if (mode == "claim" || mode == "cancel") && t.State == Pending ||
				mode == "attest" && t.State == Claimed ||
				(mode == "requeue" || mode == "gate") && t.State == NeedsReview {
				task = t
				break
			}
		}
		if task == nil {
			return 0
		}
		clk.t = time.Now()
		switch mode {
		case "claim":
			run := home.NewRunID(clk.t)
			if err := os.MkdirAll(p.W.Run(run), 0o700); err != nil {
				return fail(err)
			}
			_, err = p.Claim(ctx, task.ID, run)
		case "attest":
			_, err = p.Attest(ctx, task.ID, task.Claim.Run, runs.Evidence{Report: "complete"})
		case "cancel":
			_, err = p.Cancel(ctx, task.ID, "enough", ByOwner)
		case "requeue":
			_, _, err = p.Requeue(ctx, task.ID, ByOwner)
		case "gate":
			_, err = p.ResolveGate(ctx, task.ID, "g1", GateApproved, "fine")
		}
		if err != nil {
			return fail(err)
		}
		say(task.ID)
	}
	return 0
}

// killSetup makes n tasks in the state mode's writer starts from.
func killSetup(t *testing.T, p *Partition, mode string, n int) []string {
	t.Helper()
	if mode == "fire" {
		p.clock = &stepClock{t: fireStart.Add(-30 * time.Second)}
		if _, err := p.AddTemplate(ctx, NewTemplate{ID: "tick", Cron: "@every 1m", Text: "tick", Overlap: "allow"}); err != nil {
			t.Fatal(err)
		}
		return nil
	}
	var ids []string
	for i := 0; i < n; i++ {
		task := mustAdd(t, p, NewTask{Text: fmt.Sprintf("task %d", i)})
		ids = append(ids, task.ID)
		if mode == "claim" || mode == "cancel" {
			continue
		}
		run := home.NewRunID(p.Now())
		if err := os.MkdirAll(p.W.Run(run), 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Claim(ctx, task.ID, run); err != nil {
			t.Fatal(err)
		}
		if mode == "attest" {
			continue
		}
		if _, err := p.ApplyAction(ctx, run, task.ID, Action{N: 1, Kind: outbox.KindPropose, Text: "push"}); err != nil {
			t.Fatal(err)
		}
		if got, err := p.Attest(ctx, task.ID, run, good); err != nil || got != NeedsReview {
			t.Fatalf("attest = %q, %v", got, err)
		}
	}
	return ids
}

// killCheck is what must hold after every kill; printed are the ids the
// writer said it changed.
func killCheck(t *testing.T, p *Partition, mode string, ids []string, printed map[string]bool, round int) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s round %d: %s", mode, round, fmt.Sprintf(format, args...))
	}
	for _, path := range []string{p.W.TasksFile(), p.W.Schedule()} {
		data, err := os.ReadFile(path)
		if err != nil {
			fail("%v", err)
		}
		full, err := DecodeFile(path, data)
		if err != nil {
			fail("%v", err)
		}
		// A seal is the file's own: a sealed read agrees with DecodeFile.
		if sdata, seal, err := readSealed(path); err == nil && sealed(seal, sdata) {
			r, sf, ok := decodeSealed(sdata)
			if !ok || sf.Version != full.Version || r.n != len(full.Tasks) {
				fail("%s is sealed but does not read as sealed", path)
			}
		}
	}
	data, _ := os.ReadFile(p.W.Journal())
	for i, raw := range fsx.SplitLines(data) {
		if _, err := DecodeLine(raw); err != nil {
			fail("journal line %d: %v", i+1, err)
		}
	}
	r, err := p.Fsck(ctx)
	if err != nil || !r.Clean() {
		fail("fsck: %v %v", err, r.Problems)
	}
	f := mustRead(t, p) // rolls forward, as the next writer would
	seen := map[string]bool{}
	for _, task := range f.Tasks {
		if seen[task.ID] {
			fail("task %s twice in tasks.json", task.ID)
		}
		seen[task.ID] = true
	}
	events := map[string]map[string]int{} // task -> event -> lines
	var fired []Line
	for _, l := range mustJournal(t, p) {
		if events[l.Task] == nil {
			events[l.Task] = map[string]int{}
		}
		events[l.Task][l.Event]++
		switch l.Event {
		case EvFired:
			fired = append(fired, l)
		case EvSkipped:
			fail("an activation skipped: %+v", l)
		}
	}
	if mode == "fire" {
		// Every activation from the first on fired exactly once, in order,
		// and the cursor is the last.
		for i, l := range fired {
			want := fireStart.Add(time.Duration(i) * time.Minute)
			if l.Slot == nil || !l.Slot.Equal(want) {
				fail("activation %d: slot %v, want %v", i, l.Slot, want)
			}
			if f.Task(l.Task) == nil {
				fail("fired task %s not in tasks.json", l.Task)
			}
		}
		if c := f.Template("tick").Cursor; len(fired) > 0 && (c == nil || !c.Equal(*fired[len(fired)-1].Slot)) {
			fail("cursor %v, last activation %v", c, fired[len(fired)-1].Slot)
		}
		if len(f.Tasks) != len(fired) {
			fail("%d tasks, %d fired lines", len(f.Tasks), len(fired))
		}
		for id := range printed {
			if f.Task(id) == nil {
				fail("printed %s, not in tasks.json", id)
			}
		}
		return
	}
	if len(f.Tasks)+countFinished(events, ids) != len(ids) {
		fail("%d live and %d finished of %d tasks", len(f.Tasks), countFinished(events, ids), len(ids))
	}
	for _, id := range ids {
		task, ev := f.Task(id), events[id]
		done := ev[EvCompleted] + ev[EvCanceled] + ev[EvFailed]
		if done > 1 {
			fail("task %s finished %d times", id, done)
		}
		if (task == nil) == (done == 0) {
			fail("task %s: live %v, finished %d times", id, task != nil, done)
		}
		var ok bool
		switch mode {
		case "claim":
			ok = task != nil && (task.State == Pending && ev[EvClaimed] == 0 || task.State == Claimed && ev[EvClaimed] == 1)
			ok = ok && (!printed[id] || task.State == Claimed)
		case "attest":
			ok = task != nil && task.State == Claimed || task == nil && ev[EvCompleted] == 1
			ok = ok && (!printed[id] || task == nil)
		case "cancel":
			ok = task != nil && task.State == Pending || task == nil && ev[EvCanceled] == 1
			ok = ok && (!printed[id] || task == nil)
		case "requeue":
			ok = task != nil && (task.State == NeedsReview && ev[EvRequeued] == 0 || task.State == Pending && ev[EvRequeued] == 1)
			ok = ok && (!printed[id] || task.State == Pending)
		case "gate":
			ok = task != nil && task.State == NeedsReview && ev[EvGateResolved] == 0 || task == nil && ev[EvCompleted] == 1 && ev[EvGateResolved] == 1
			ok = ok && (!printed[id] || task == nil)
		}
		if !ok {
			fail("task %s: %+v, events %v, printed %v", id, task, ev, printed[id])
		}
	}
}

func countFinished(events map[string]map[string]int, ids []string) int {
	n := 0
	for _, id := range ids {
		n += events[id][EvCompleted] + events[id][EvCanceled] + events[id][EvFailed]
	}
	return n
}

func TestEveryWriterKilledAnywhereLosesNothing(t *testing.T) {
	rounds, n := 60, 150
	if testing.Short() {
		rounds, n = 12, 60
	}
	for _, mode := range []string{"claim", "fire", "attest", "cancel", "requeue", "gate"} {
		t.Run(mode, func(t *testing.T) {
			h := newHome(t, "dobby")
			p, _ := open(t, h, "dobby")
			ids := killSetup(t, p, mode, n)
			p.clock = SystemClock{}
			rng := rand.New(rand.NewSource(time.Now().UnixNano()))
			printed := map[string]bool{}
			kills, start := 0, time.Now()
			for r := 0; r < rounds; r++ {
				cmd := helperCmd(t, h, "k-"+mode, 0)
				stdout, _ := cmd.StdoutPipe()
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan struct{})
				go func() {
					sc := bufio.NewScanner(stdout)
					for sc.Scan() {
						printed[sc.Text()] = true
					}
					close(done)
				}()
				time.Sleep(time.Duration(2000+rng.Intn(40000)) * time.Microsecond)
				cmd.Process.Signal(syscall.SIGKILL)
				<-done
				err := cmd.Wait()
				if ee, ok := err.(interface{ ExitCode() int }); ok && ee.ExitCode() > 0 {
					t.Fatalf("round %d: the writer failed (exit %d)", r, ee.ExitCode())
				}
				if err != nil {
					kills++
				}
				killCheck(t, p, mode, ids, printed, r)
				if err == nil {
					break // nothing left to change
				}
			}
			if mode == "claim" {
				// Every claim is still live or is reclaimed: with no box, a
				// claim past the start grace is reclaimed to pending.
				p.clock = &stepClock{t: time.Now().Add(StartGrace + time.Minute)}
				f := mustRead(t, p)
				for _, task := range f.Tasks {
					if task.State == Claimed {
						if _, err := p.Reclaim(ctx, task.ID, task.Claim.Run, "box lost"); err != nil {
							t.Fatalf("reclaim %s: %v", task.ID, err)
						}
					}
				}
				for _, task := range mustRead(t, p).Tasks {
					if task.State != Pending {
						t.Fatalf("after reclaim: %s is %s", task.ID, task.State)
					}
				}
				mustClean(t, p)
			}
			t.Logf("%s: %d kills in %v, %d changes printed", mode, kills, time.Since(start).Round(time.Millisecond), len(printed))
		})
	}
}

// A kill between a completing gate resolution's lines (gate-resolved
// appended, completed not yet) is finished by the next writer: the task
// completes, the continuation is filed, once.
func TestTornGateResolutionIsFinishedByTheNextWriter(t *testing.T) {
	for _, tornAt := range []string{EvGateResolved, EvCompleted} {
		t.Run(tornAt, func(t *testing.T) { tornGate(t, tornAt) })
	}
}

func tornGate(t *testing.T, tornAt string) {
	p, _ := open(t, newHome(t, "dobby"), "dobby")
	a := mustAdd(t, p, NewTask{Text: "a"})
	run := claim(t, p, a.ID)
	if _, err := p.ApplyAction(ctx, run, a.ID, Action{N: 1, Kind: outbox.KindPropose, Text: "push", Wake: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := p.Attest(ctx, a.ID, run, good); got != NeedsReview {
		t.Fatalf("attest = %q", got)
	}
	before, _ := os.ReadFile(p.W.TasksFile())
	if _, err := p.ResolveGate(ctx, a.ID, "g1", "approve", ""); err != nil {
		t.Fatal(err)
	}
	// Tear it: keep the journal up to the gate-resolved line (or the
	// completed one), and the tasks.json of before the change.
	data, _ := os.ReadFile(p.W.Journal())
	var keep []byte
	for _, raw := range fsx.SplitLines(data) {
		keep = append(append(keep, raw...), '\n')
		if l, _ := DecodeLine(raw); l.Event == tornAt {
			break
		}
	}
	os.WriteFile(p.W.Journal(), keep, 0o600)
	os.WriteFile(p.W.TasksFile(), before, 0o600)
	f := mustRead(t, p)
	if f.Task(a.ID) != nil {
		t.Fatalf("task %s still live after the roll-forward: %+v", a.ID, f.Task(a.ID))
	}
	completed, conts := 0, 0
	for _, l := range mustJournal(t, p) {
		if l.Event == EvCompleted && l.Task == a.ID {
			completed++
		}
		if l.Event == EvFiled && l.From == a.ID {
			conts++
		}
	}
	mustRead(t, p)
	if completed != 1 || conts != 1 {
		t.Fatalf("%d completed lines, %d continuations", completed, conts)
	}
	mustClean(t, p)
}
