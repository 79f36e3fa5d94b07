package tms

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
)

// oracleAttempts is Attempts as it was before the index: the whole journal.
func oracleAttempts(t testing.TB, p *Partition, id string) []Attempt {
	t.Helper()
	var out []Attempt
	for _, l := range mustJournal(t, p) {
		if l.Task == id && attemptEvent(l.Event) {
			reason := l.Reason
			if reason == "" && l.Evidence != nil {
				reason = l.Evidence.Note
			}
			out = append(out, Attempt{Seq: l.Seq, At: l.At, Event: l.Event, Run: l.Run, By: l.By, Reason: reason})
		}
	}
	return out
}

// checkHistory fails unless the history (index and journal past it)
// answers for every task of the journal what a read of the whole journal
// does.
func checkHistory(t testing.TB, p *Partition) {
	t.Helper()
	fin, ends, err := finishedWithLines(p.W.Journal())
	if err != nil {
		t.Fatal(err)
	}
	h, err := p.history()
	if err != nil {
		t.Fatal(err)
	}
	ids := h.finishedIDs()
	sort.Strings(ids)
	var want []string
	for id := range fin {
		want = append(want, id)
	}
	sort.Strings(want)
	if !reflect.DeepEqual(ids, want) {
		t.Fatalf("finished ids %v, the journal's %v", ids, want)
	}
	all := map[string]bool{}
	for _, l := range mustJournal(t, p) {
		if l.Task != "" {
			all[l.Task] = true
		}
	}
	for id := range all {
		task, end, ok, err := h.finished(id)
		if err != nil {
			t.Fatal(err)
		}
		wt, finished := fin[id]
		if ok != finished || (ok && (!reflect.DeepEqual(task, wt) || !reflect.DeepEqual(*end, ends[id]))) {
			t.Fatalf("task %s: finished %v %+v %+v, the journal's %v %+v %+v", id, ok, task, end, finished, wt, ends[id])
		}
		if st := h.state(id); st != wt.State {
			t.Fatalf("task %s: state %q, the journal's %q", id, st, wt.State)
		}
		got, err := h.attempts(id)
		if err != nil {
			t.Fatal(err)
		}
		if w := oracleAttempts(t, p, id); !reflect.DeepEqual(got, w) {
			t.Fatalf("task %s: attempts %+v, the journal's %+v", id, got, w)
		}
	}
}

// someHistory gives p tasks that completed, failed, were canceled,
// requeued after finishing and reclaimed; it returns a finished one.
func someHistory(t *testing.T, p *Partition, clk *fakeClock, n int) string {
	t.Helper()
	var last string
	for i := 0; i < n; i++ {
		a := mustAdd(t, p, NewTask{Text: fmt.Sprintf("a %d", i)})
		b := mustAdd(t, p, NewTask{Text: fmt.Sprintf("b %d", i), After: []string{a.ID}})
		run := claim(t, p, a.ID)
		ev := good
		if i%3 == 1 {
			ev = runs.Evidence{Exit: 3, Report: "fail", Reason: "broke"}
		}
		if _, err := p.Attest(ctx, a.ID, run, ev); err != nil {
			t.Fatal(err)
		}
		if i%3 == 1 {
			if _, _, err := p.Requeue(ctx, a.ID, ByOwner); err != nil {
				t.Fatal(err)
			}
			r2 := claim(t, p, a.ID)
			clk.Add(StartGrace + time.Minute)
			if _, err := p.Reclaim(ctx, a.ID, r2, "box lost"); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := p.Cancel(ctx, b.ID, "not needed", ByOwner); err != nil {
			t.Fatal(err)
		}
		last = b.ID
	}
	return last
}

func setIndexEvery(t *testing.T, n int64) {
	old := indexEvery
	indexEvery = n
	t.Cleanup(func() { indexEvery = old })
}

// The index and the journal past it answer as the whole journal does:
// with no index yet, right after one is written, and with lines past it.
func TestHistoryAnswersAsTheJournal(t *testing.T) {
	for _, every := range []int64{0, 2 << 10, 1 << 40} {
		t.Run(fmt.Sprint(every), func(t *testing.T) {
			setIndexEvery(t, every)
			p, clk := open(t, newHome(t, "w"), "w")
			checkHistory(t, p)
			for round := 0; round < 4; round++ {
				someHistory(t, p, clk, 4)
				checkHistory(t, p)
			}
			if _, err := os.Stat(p.W.TasksIndex()); err != nil {
				t.Fatalf("no index written: %v", err)
			}
			mustClean(t, p)
		})
	}
}

// The finished-task paths go through the index: show, a dependency on a
// finished task (settled at once), requeue, a too-late cancel.
func TestFinishedTasksFoundThroughTheIndex(t *testing.T) {
	setIndexEvery(t, 0)
	p, clk := open(t, newHome(t, "w"), "w")
	done := someHistory(t, p, clk, 3)
	if _, err := os.Stat(p.W.TasksIndex()); err != nil {
		t.Fatalf("no index: %v", err)
	}
	got, err := p.Show(ctx, done)
	if err != nil || got.State != Canceled {
		t.Fatalf("show %s = %+v, %v", done, got, err)
	}
	c := mustAdd(t, p, NewTask{Text: "after a canceled one", After: []string{done}})
	if c.Settled[done] != Canceled {
		t.Fatalf("dependency on a canceled task not settled: %+v", c)
	}
	if _, err := p.Cancel(ctx, done, "again", ByOwner); !errors.Is(err, errs.ErrConflict) {
		t.Fatalf("cancel of a finished task: %v, want a conflict", err)
	}
	if _, err := p.Add(ctx, NewTask{Text: "x", After: []string{"t-1999"}}); !errors.Is(err, errs.ErrUsage) {
		t.Fatalf("unknown dependency: %v", err)
	}
	task, changed, err := p.Requeue(ctx, done, ByOwner)
	if err != nil || !changed || task.State != Pending || task.ID != done {
		t.Fatalf("requeue of a finished task = %+v %v %v", task, changed, err)
	}
	checkHistory(t, p)
	mustClean(t, p)
}

// Reading the history takes no partition lock: it answers while another
// process holds it.
func TestHistoryTakesNoLock(t *testing.T) {
	setIndexEvery(t, 0)
	p, clk := open(t, newHome(t, "w"), "w")
	done := someHistory(t, p, clk, 2)
	lk, err := fsx.LockPath(ctx, p.W.TasksLock(), false, fsx.Forever)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Unlock()
	h, err := p.history()
	if err != nil {
		t.Fatal(err)
	}
	if h.state(done) != Canceled {
		t.Fatalf("state %q", h.state(done))
	}
	if _, err := p.Attempts(done); err != nil {
		t.Fatal(err)
	}
}

// An index that cannot be read is refused (exit 14), never overwritten;
// fsck says so; fsck --rebuild (Rebuild) makes it again.
func TestUnreadableIndexRefusedThenRebuilt(t *testing.T) {
	setIndexEvery(t, 0)
	p, clk := open(t, newHome(t, "w"), "w")
	done := someHistory(t, p, clk, 2)
	data, err := os.ReadFile(p.W.TasksIndex())
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string][]byte{
		"flipped":  bytes.Replace(data, []byte(`"canceled"`), []byte(`"cancelled"`), 1),
		"format":   bytes.Replace(data, []byte(`"format":1`), []byte(`"format":9`), 1),
		"cut":      data[:len(data)-5],
		"no lines": []byte("garbage"),
	} {
		t.Run(name, func(t *testing.T) {
			os.WriteFile(p.W.TasksIndex(), bad, 0o600)
			if _, err := p.Show(ctx, done); !errors.Is(err, errs.ErrRefused) {
				t.Fatalf("show with a %s index: %v, want refused", name, err)
			}
			mustAdd(t, p, NewTask{Text: "more"}) // nothing else stops
			if after, _ := os.ReadFile(p.W.TasksIndex()); !bytes.Equal(after, bad) {
				t.Fatal("the refused index was rewritten")
			}
			if r, err := p.Fsck(ctx); err != nil || r.Clean() {
				t.Fatalf("fsck with a %s index: %v %+v", name, err, r)
			}
			if _, err := p.Rebuild(ctx); err != nil {
				t.Fatal(err)
			}
			checkHistory(t, p)
			mustClean(t, p)
		})
	}
}

// A journal rewritten under the index (a forget moves its lines) makes
// the index stale: its readers fold the journal again and replace it, so
// no answer is ever wrong.
func TestStaleIndexIsSetAside(t *testing.T) {
	setIndexEvery(t, 0)
	p, clk := open(t, newHome(t, "w"), "w")
	someHistory(t, p, clk, 3)
	checkHistory(t, p) // writes the index
	before, _ := os.ReadFile(p.W.TasksIndex())
	// Shorten the first line's text, as a forget's scrub does: every
	// later line moves.
	data, _ := os.ReadFile(p.W.Journal())
	data = bytes.Replace(data, []byte(`"text":"a 0"`), []byte(`"text":""`), 1)
	if err := fsx.WriteFile(p.W.Journal(), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if r, err := p.Fsck(ctx); err != nil || len(r.Problems) > 0 && r.JournalProblem {
		t.Fatalf("fsck: %v %+v", err, r)
	}
	checkHistory(t, p)
	if after, _ := os.ReadFile(p.W.TasksIndex()); bytes.Equal(after, before) {
		t.Fatal("the stale index was not replaced")
	}
	mustClean(t, p)
}

func FuzzIndexParse(f *testing.F) {
	f.Add([]byte(`{"format":1,"seq":0,"off":0,"entries":0,"crc":"00000000"}` + "\n"))
	e := &histEntry{ID: "t-2026-01-01-00-00-00-aaaa", State: Canceled, End: &lineRef{7, 1234}, Hist: []lineRef{{3, 99}, {7, 1234}}}
	h := &history{over: map[string]*histEntry{e.ID: e, "t-é\"x": {ID: "t-é\"x", Hist: []lineRef{{1, 0}}}}, seq: 7, off: 2000}
	f.Add(h.encode())
	f.Fuzz(func(t *testing.T, data []byte) {
		x, err := parseIndex("index.jsonl", data)
		if err != nil {
			if !errors.Is(err, errs.ErrRefused) {
				t.Fatalf("refusal not exit 14: %v", err)
			}
			return
		}
		// Accepted: every entry decodes, re-encodes to its own line and
		// is what find returns for its id (the first line with it).
		first := map[string]bool{}
		x.each(func(id string, line []byte) {
			e, ok := decodeEntry(line)
			if !ok || e.ID != id {
				t.Fatalf("accepted entry %q does not decode (%v, %q)", line, ok, id)
			}
			if got := appendEntry(nil, e); !bytes.Equal(got, line) {
				t.Fatalf("entry %q re-encodes as %q", line, got)
			}
			if !first[id] {
				first[id] = true
				if g := x.find(id); g == nil || !reflect.DeepEqual(g, e) {
					t.Fatalf("find(%q) = %+v, the line says %+v", id, g, e)
				}
			}
		})
		// What the writer writes from it reads back the same.
		hh := &history{idx: x, over: map[string]*histEntry{}, seq: x.seq, off: x.off}
		y, err := parseIndex("index.jsonl", hh.encode())
		if err != nil || !bytes.Equal(y.body, x.body) || y.seq != x.seq || y.off != x.off {
			t.Fatalf("rewritten index differs (%v)", err)
		}
	})
}

// indexKillHelper finishes tasks and reads the history over and over, so
// the index is rewritten all the time, until killed.
func indexKillHelper() int {
	indexEvery = 0
	h, err := home.Open(os.Getenv("TMS_HOME"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	org, _ := config.ParseOrg("org.toml", nil)
	p, err := Open(h, "dobby", Options{Org: org, Worker: &config.Worker{Name: "dobby"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; i < 100000; i++ {
		task, err := p.Add(ctx, NewTask{Text: fmt.Sprintf("index %d", i)})
		if err == nil {
			_, err = p.Cancel(ctx, task.ID, "done", ByOwner)
		}
		if err == nil {
			_, err = p.history()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(out, task.ID)
		out.Flush()
	}
	return 0
}

// Kill -9 at random instants while the index is being written: it is
// always either the old one or the new one (fsck finds it agreeing with
// the journal), and the history answers as the journal does.
func TestIndexWriterKilledAnywhereIsNeverWrong(t *testing.T) {
	rounds := 40
	if testing.Short() {
		rounds = 10
	}
	h := newHome(t, "dobby")
	p, _ := open(t, h, "dobby")
	p.clock = SystemClock{}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	printed := 0
	for r := 0; r < rounds; r++ {
		cmd := helperCmd(t, h, "index", 0)
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				printed++
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
		if _, err := readIndex(p.W.TasksIndex()); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
		if rep, err := p.Fsck(ctx); err != nil || !rep.Clean() {
			t.Fatalf("round %d: fsck: %v %v", r, err, rep.Problems)
		}
		checkHistory(t, p)
	}
	t.Logf("%d rounds, %d tasks finished and indexed", rounds, printed)
}
