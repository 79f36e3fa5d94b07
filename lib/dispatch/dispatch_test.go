package dispatch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

// These tests drive the real TMS on real files. Where they only check the
// claim logic, the box program is /bin/true: the claim is made and "its
// box" exits at once without a trace, exactly like a supervisor that dies
// before writing box.json. The box-based behaviour is tested in
// cmd/roster-dispatch with the real roster-box.

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *logBuf) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}
func (l *logBuf) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

type fixture struct {
	t     *testing.T
	h     home.Home
	clock *clock
	log   *logBuf
}

func newFixture(t *testing.T, org string) *fixture {
	t.Helper()
	h := home.Home{Dir: t.TempDir()}
	for _, d := range []string{h.Data(), h.WorkersDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if org != "" {
		if err := os.WriteFile(h.OrgFile(), []byte(org), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &fixture{t: t, h: h, clock: &clock{t: time.Now().UTC()}, log: &logBuf{}}
}

var uid = 300000

func (f *fixture) worker(name, extra string) {
	f.t.Helper()
	uid++
	spec := fmt.Sprintf("command = [\"/bin/true\"]\nuid = %d\nheartbeat = \"off\"\n%s\n", uid, extra)
	if err := os.WriteFile(f.h.SpecFile(name), []byte(spec), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) part(name string) *tms.Partition {
	f.t.Helper()
	p, err := tms.Open(f.h, name, tms.Options{Clock: f.clock})
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *fixture) add(name string, n int) []string {
	f.t.Helper()
	var ids []string
	for i := 0; i < n; i++ {
		task, err := f.part(name).Add(context.Background(), tms.NewTask{Text: fmt.Sprintf("task %d", i)})
		if err != nil {
			f.t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	return ids
}

func (f *fixture) dispatcher(o Options) *Dispatcher {
	o.Home = f.h
	o.Clock = f.clock
	o.Log = slog.New(slog.NewTextHandler(f.log, nil))
	if o.BoxProgram == "" {
		o.BoxProgram = "/bin/true"
	}
	o.SnapProgram, o.RunsProgram = "/bin/true", "/bin/true"
	return New(o)
}

func (f *fixture) claimed(name string) int {
	f.t.Helper()
	n, err := f.part(name).LiveClaims(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

func TestCapHoldsAcrossTicks(t *testing.T) {
	f := newFixture(t, "[dispatch]\ncap = 2\n")
	f.worker("dobby", "concurrency = 10")
	f.add("dobby", 6)
	d := f.dispatcher(Options{})
	for i := 0; i < 3; i++ {
		rep := d.Tick(context.Background())
		if i == 0 && len(rep.Started) != 2 {
			t.Fatalf("first tick started %d boxes, want 2 (cap)", len(rep.Started))
		}
		if i > 0 && len(rep.Started) != 0 {
			t.Fatalf("tick %d started %d more boxes with the cap full", i, len(rep.Started))
		}
		if rep.Live != 2 || rep.Waiting != 4 {
			t.Fatalf("tick %d: live %d waiting %d, want 2 and 4", i, rep.Live, rep.Waiting)
		}
	}
	// The count is on disk: a new dispatcher (a restart) sees the 2 claims.
	if rep := f.dispatcher(Options{}).Tick(context.Background()); len(rep.Started) != 0 {
		t.Fatalf("a restarted dispatcher claimed %d over the cap", len(rep.Started))
	}
	// --cap overrides the org's cap.
	if rep := f.dispatcher(Options{Cap: 3}).Tick(context.Background()); len(rep.Started) != 1 {
		t.Fatalf("--cap 3 started %d, want 1 more", len(rep.Started))
	}
}

func TestClaimRoundRobinAcrossWorkers(t *testing.T) {
	f := newFixture(t, "[dispatch]\ncap = 3\n")
	for _, w := range []string{"aa", "bb", "cc"} {
		f.worker(w, "concurrency = 5")
		f.add(w, 3)
	}
	rep := f.dispatcher(Options{}).Tick(context.Background())
	seen := map[string]int{}
	for _, s := range rep.Started {
		seen[s.Worker]++
	}
	if len(rep.Started) != 3 || seen["aa"] != 1 || seen["bb"] != 1 || seen["cc"] != 1 {
		t.Fatalf("cap 3 over 3 busy workers claimed %v, want one each", seen)
	}
}

func TestConcurrencyAndPausedHold(t *testing.T) {
	f := newFixture(t, "[dispatch]\ncap = 10\n")
	f.worker("solo", "concurrency = 1")
	f.worker("duo", "concurrency = 2")
	f.worker("napping", "paused = true")
	f.add("solo", 3)
	f.add("duo", 3)
	f.add("napping", 2)
	d := f.dispatcher(Options{})
	d.Tick(context.Background())
	d.Tick(context.Background())
	if got := [3]int{f.claimed("solo"), f.claimed("duo"), f.claimed("napping")}; got != [3]int{1, 2, 0} {
		t.Fatalf("claims solo/duo/napping = %v, want [1 2 0]", got)
	}
}

func TestWorkerFilterServesOnlyNamedWorkers(t *testing.T) {
	f := newFixture(t, "")
	f.worker("aa", "")
	f.worker("bb", "")
	f.add("aa", 1)
	f.add("bb", 1)
	f.dispatcher(Options{Workers: []string{"bb"}}).Tick(context.Background())
	if f.claimed("aa") != 0 || f.claimed("bb") != 1 {
		t.Fatalf("--worker bb claimed aa:%d bb:%d", f.claimed("aa"), f.claimed("bb"))
	}
}

func TestCredentialFileHoldLoggedOnceAndResumes(t *testing.T) {
	key := t.TempDir() + "/model-key"
	f := newFixture(t, fmt.Sprintf("[dispatch]\ncredentials = [\"file:%s\"]\n", key))
	f.worker("dobby", "")
	f.add("dobby", 1)
	d := f.dispatcher(Options{})
	for i := 0; i < 3; i++ {
		rep := d.Tick(context.Background())
		if len(rep.Started) != 0 || rep.Held == "" {
			t.Fatalf("claimed %d with the credential absent (held %q)", len(rep.Started), rep.Held)
		}
	}
	if n := f.log.count("dispatch held"); n != 1 {
		t.Fatalf("hold logged %d times, want once:\n%s", n, f.log)
	}
	os.WriteFile(key, []byte("sk-test\n"), 0o600)
	if rep := d.Tick(context.Background()); len(rep.Started) != 1 {
		t.Fatalf("credential file appeared: claimed %d, want 1 without a restart", len(rep.Started))
	}
	if n := f.log.count("dispatch hold ended"); n != 1 {
		t.Fatalf("hold end logged %d times, want once:\n%s", n, f.log)
	}
}

func TestCredentialEnvFixedAtStart(t *testing.T) {
	f := newFixture(t, "[dispatch]\ncredentials = [\"env:ROSTER_TEST_KEY\"]\n")
	f.worker("dobby", "")
	f.add("dobby", 1)
	unset := f.dispatcher(Options{Getenv: func(string) string { return "" }})
	if rep := unset.Tick(context.Background()); len(rep.Started) != 0 {
		t.Fatal("claimed with the env credential unset")
	}
	set := f.dispatcher(Options{Getenv: func(k string) string {
		if k == "ROSTER_TEST_KEY" {
			return "x"
		}
		return ""
	}})
	if rep := set.Tick(context.Background()); len(rep.Started) != 1 {
		t.Fatal("a dispatcher started with the env credential set claimed nothing")
	}
}

func TestCorruptSpecSkippedLoggedOnceOthersRun(t *testing.T) {
	f := newFixture(t, "")
	f.worker("good", "")
	f.worker("bad", "")
	f.add("good", 2)
	f.add("bad", 1)
	os.WriteFile(f.h.SpecFile("bad"), []byte("command = [\nnonsense"), 0o644)
	d := f.dispatcher(Options{Cap: 5})
	for i := 0; i < 3; i++ {
		d.Tick(context.Background())
	}
	if f.claimed("good") != 1 {
		t.Fatalf("good worker not served while bad's spec is corrupt")
	}
	if n := f.log.count(`worker=bad`); n != 1 {
		t.Fatalf("corrupt spec logged %d times, want once:\n%s", n, f.log)
	}
	// Repaired: it is served again and the recovery is logged.
	f.worker("bad", "")
	d.Tick(context.Background())
	if f.claimed("bad") != 1 || f.log.count("readable again") != 1 {
		t.Fatalf("repaired worker: claimed %d; log:\n%s", f.claimed("bad"), f.log)
	}
}

func TestCorruptPartitionSkippedLoggedOnce(t *testing.T) {
	f := newFixture(t, "")
	f.worker("good", "")
	f.worker("bad", "")
	f.add("good", 1)
	f.add("bad", 1)
	os.WriteFile(f.h.Worker("bad").TasksFile(), []byte(`{"format":1,"tasks":[`), 0o600)
	d := f.dispatcher(Options{Cap: 5})
	d.Tick(context.Background())
	d.Tick(context.Background())
	if f.claimed("good") != 1 {
		t.Fatal("good worker not served while bad's partition is corrupt")
	}
	if n := f.log.count(`worker=bad`); n != 1 {
		t.Fatalf("corrupt partition logged %d times, want once:\n%s", n, f.log)
	}
	if data, _ := os.ReadFile(f.h.Worker("bad").TasksFile()); string(data) != `{"format":1,"tasks":[` {
		t.Fatal("the corrupt tasks.json was overwritten")
	}
}

func TestSecondDispatcherIsBusyNamingPID(t *testing.T) {
	f := newFixture(t, "")
	lk, err := Lock(f.h)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Unlock()
	_, err = Lock(f.h)
	if !errors.Is(err, errs.ErrBusy) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second lock: %v; want busy naming pid %d", err, os.Getpid())
	}
	fi, _ := os.Stat(f.h.DispatchLock())
	lk.Unlock()
	lk2, err := Lock(f.h)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	defer lk2.Unlock()
	fi2, _ := os.Stat(f.h.DispatchLock())
	if !os.SameFile(fi, fi2) {
		t.Fatal("dispatch.lock was replaced; it must be written in place")
	}
}

func TestDailyJobsOncePerLocalDayAcrossRestarts(t *testing.T) {
	f := newFixture(t, "")
	f.worker("dobby", "") // a worker to sweep
	marker := t.TempDir() + "/ran"
	job := t.TempDir() + "/job.sh"
	os.WriteFile(job, []byte("#!/bin/sh\necho \"$1\" >> "+marker+"\n"), 0o755)
	mk := func() *Dispatcher {
		d := f.dispatcher(Options{})
		d.o.SnapProgram, d.o.RunsProgram = job, job
		return d
	}
	count := func() int {
		data, _ := os.ReadFile(marker)
		return strings.Count(string(data), "\n")
	}
	d := mk()
	d.maybeDaily(context.Background())
	d.WaitDaily()
	if count() != 2 {
		t.Fatalf("first start: %d jobs ran, want sweep and prune", count())
	}
	data, _ := os.ReadFile(marker)
	if string(data) != "sweep\nprune\n" {
		t.Fatalf("jobs ran as %q", data)
	}
	// A restart the same day repeats nothing.
	d = mk()
	d.maybeDaily(context.Background())
	d.WaitDaily()
	if count() != 2 {
		t.Fatalf("restart on the same day ran the jobs again")
	}
	// The next host-local day they run once more.
	f.clock.add(24 * time.Hour)
	d = mk()
	d.maybeDaily(context.Background())
	d.WaitDaily()
	d.maybeDaily(context.Background())
	d.WaitDaily()
	if count() != 4 {
		t.Fatalf("next day: %d job runs in all, want 4", count())
	}
	s, err := d.ReadState()
	if err != nil || s.Daily.Day != d.Today() || s.Daily.Sweep != "ok" {
		t.Fatalf("dispatch.json: %+v %v", s, err)
	}
}

func TestReclaimDeadBoxMakesTaskPendingAgain(t *testing.T) {
	f := newFixture(t, "")
	f.worker("dobby", "")
	ids := f.add("dobby", 2)
	p := f.part("dobby")
	ctx := context.Background()
	dead := home.NewRunID(f.clock.Now())
	young := home.NewRunID(f.clock.Now())
	if _, err := p.Claim(ctx, ids[0], dead); err != nil {
		t.Fatal(err)
	}
	// A supervisor that ran and died: box.json names a process that is gone.
	b, _ := runs.SelfBoxInfo("dobby", dead, ids[0], f.clock.Now())
	b.StartTime++ // same pid, another process: not alive
	os.MkdirAll(p.W.Run(dead), 0o755)
	runs.WriteBoxInfo(p.W.Run(dead), b)
	f.clock.add(time.Second)
	if _, err := p.Claim(ctx, ids[1], young); err != nil {
		t.Fatal(err)
	}
	d := f.dispatcher(Options{})
	got := d.Reclaim(ctx)
	if len(got) != 1 || got[0].Task != ids[0] || got[0].State != tms.Pending || got[0].Err != nil {
		t.Fatalf("reclaim: %+v; want only %s back to pending", got, ids[0])
	}
	task, _ := p.Get(ctx, ids[0])
	if task.State != tms.Pending || task.Attempts != 1 {
		t.Fatalf("task after reclaim: %s attempts %d", task.State, task.Attempts)
	}
	// The young claim without box.json is left alone, until the grace passes.
	if task, _ := p.Get(ctx, ids[1]); task.State != tms.Claimed {
		t.Fatalf("young claim reclaimed: %s", task.State)
	}
	f.clock.add(tms.StartGrace + time.Second)
	if got := d.Reclaim(ctx); len(got) != 1 || got[0].Task != ids[1] {
		t.Fatalf("claim past the grace with no box.json: %+v", got)
	}
}

func TestReclaimLeavesLiveBoxAlone(t *testing.T) {
	f := newFixture(t, "")
	f.worker("dobby", "")
	ids := f.add("dobby", 1)
	p := f.part("dobby")
	ctx := context.Background()
	run := home.NewRunID(f.clock.Now())
	p.Claim(ctx, ids[0], run)
	b, _ := runs.SelfBoxInfo("dobby", run, ids[0], f.clock.Now()) // this test process: alive
	os.MkdirAll(p.W.Run(run), 0o755)
	runs.WriteBoxInfo(p.W.Run(run), b)
	f.clock.add(time.Hour)
	if got := f.dispatcher(Options{}).Reclaim(ctx); len(got) != 0 {
		t.Fatalf("a live box was reclaimed: %+v", got)
	}
}

func TestFiledTaskWakesTheLoopWithoutPoll(t *testing.T) {
	f := newFixture(t, "")
	f.worker("dobby", "")
	f.part("dobby").Read(context.Background()) // the partition's folders exist
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.clock.t = time.Time{}
	d := f.dispatcher(Options{Poll: time.Hour})
	d.clock = tms.SystemClock{}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	time.Sleep(200 * time.Millisecond) // let it reach its sleep (an hour, by poll)
	f.clock.t = time.Now()
	f.add("dobby", 1)
	deadline := time.Now().Add(30 * time.Second) // generous: without the watch it would be an hour
	for f.claimed("dobby") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the filed task was not claimed: the loop did not wake on the change\n%s", f.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
}

// TestNoFsnotifyFallsBackToPollAndStillClaims: when change notifications
// cannot be had (inotify_init failing, as on a host out of inotify
// instances), the loop says so once and wakes on its poll, which still
// finds a task filed after it started.
func TestNoFsnotifyFallsBackToPollAndStillClaims(t *testing.T) {
	old := newFSWatcher
	newFSWatcher = func() (*fsnotify.Watcher, error) { return nil, syscall.EMFILE }
	defer func() { newFSWatcher = old }()
	f := newFixture(t, "")
	f.worker("dobby", "")
	f.part("dobby").Read(context.Background())
	d := f.dispatcher(Options{Poll: 100 * time.Millisecond})
	stop := f.run(d)
	deadline := time.Now().Add(30 * time.Second)
	if f.log.count("no change notifications; waking on timers and poll only") != 1 || f.log.count("watch=false") != 1 {
		t.Fatalf("the fallback is not logged:\n%s", f.log)
	}
	f.clock.t = time.Now()
	f.add("dobby", 1)
	for f.claimed("dobby") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the filed task was not claimed by the poll\n%s", f.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
}

// run runs d's loop on the system clock until the returned stop, which
// fails the test if Run returned an error; it returns once the loop has
// said it started.
func (f *fixture) run(d *Dispatcher) (stop func()) {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d.clock = tms.SystemClock{}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for f.log.count("dispatcher started") == 0 {
		if time.Now().After(deadline) {
			cancel()
			f.t.Fatalf("not started\n%s", f.log)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return func() {
		f.t.Helper()
		cancel()
		if err := <-done; err != nil {
			f.t.Fatalf("Run after cancel: %v", err)
		}
		// Run leaves daily jobs it started to end on their own; one that
		// writes dispatch.json after the test would race its folder's
		// removal.
		waited := make(chan struct{})
		go func() { d.WaitDaily(); close(waited) }()
		select {
		case <-waited:
		case <-time.After(30 * time.Second):
			f.t.Fatalf("daily jobs still under way 30 s after stop\n%s", f.log)
		}
	}
}

// readJournal reads a worker's journal lines.
func readJournal(t *testing.T, w home.Worker) []tms.Line {
	t.Helper()
	data, err := os.ReadFile(w.Journal())
	if err != nil {
		t.Fatal(err)
	}
	var out []tms.Line
	for _, l := range bytes.Split(data, []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		line, err := tms.DecodeLine(l)
		if err != nil {
			t.Fatalf("journal line %q: %v", l, err)
		}
		out = append(out, *line)
	}
	return out
}

func TestTemplateActivationsFireOnceAcrossRestarts(t *testing.T) {
	f := newFixture(t, "[dispatch]\ncap = 100\n")
	f.worker("dobby", "concurrency = 100")
	f.clock.t = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()
	if _, err := f.part("dobby").AddTemplate(ctx, tms.NewTemplate{ID: "tick", Cron: "@every 1m", Text: "tick", Overlap: "allow"}); err != nil {
		t.Fatal(err)
	}
	start := f.clock.Now()
	// Dispatchers come and go: each ticks every 20 s for a while, then
	// stops (a restart, or a kill); between them time passes with no
	// dispatcher at all. Two dispatchers also tick over the same minutes
	// (a restart racing its predecessor's last tick).
	var prev *Dispatcher
	var last time.Time
	for round := 0; round < 6; round++ {
		d := f.dispatcher(Options{})
		for i := 0; i < 9; i++ {
			d.Tick(ctx)
			if prev != nil && i == 0 {
				prev.Tick(ctx)
			}
			last = f.clock.Now()
			f.clock.add(20 * time.Second)
		}
		prev = d
		f.clock.add(time.Duration(round*97) * time.Second) // downtime
	}

	slots := map[time.Time]int{}
	ids := map[string]bool{}
	missed := 0
	for _, l := range readJournal(t, f.h.Worker("dobby")) {
		switch l.Event {
		case tms.EvFired:
			if l.Slot == nil {
				t.Fatalf("fired line without a slot: %+v", l)
			}
			slots[l.Slot.UTC()]++
			if ids[l.Task] {
				t.Fatalf("task %s fired twice", l.Task)
			}
			ids[l.Task] = true // (a catch-up's fired line repeats its skipped line's count)
		case tms.EvSkipped:
			missed += max(l.Missed, 1)
		}
	}
	for s, n := range slots {
		if n != 1 {
			t.Fatalf("activation %s fired %d times", s, n)
		}
	}
	// Every activation up to the last tick is accounted for: fired once,
	// or counted as missed (catch-up latest), never both, never lost.
	total := int(last.Sub(start) / time.Minute)
	if got := len(slots) + missed; got != total {
		t.Fatalf("%d fired + %d missed = %d activations, want %d", len(slots), missed, got, total)
	}
	if missed == 0 {
		t.Fatal("the downtime missed nothing: the test does not exercise catch-up")
	}
}

// The daily sweep never snapshots a worker while a box of that worker is
// live (its run's post-run snapshot covers the store): it is given only
// the workers without a live box or claim when it starts, is skipped (and
// recorded so) when there is none, and nothing is claimed for the swept
// workers until it ends.
func TestDailySweepSkipsWorkersWithLiveBoxes(t *testing.T) {
	f := newFixture(t, "")
	for _, w := range []string{"boxed", "quiet", "starting"} {
		f.worker(w, "")
	}
	ctx := context.Background()
	// boxed: a claim whose supervisor (this test process) is alive.
	boxed := f.add("boxed", 1)
	run := home.NewRunID(f.clock.Now())
	if _, err := f.part("boxed").Claim(ctx, boxed[0], run); err != nil {
		t.Fatal(err)
	}
	b, _ := runs.SelfBoxInfo("boxed", run, boxed[0], f.clock.Now())
	os.MkdirAll(f.h.Worker("boxed").Run(run), 0o755)
	runs.WriteBoxInfo(f.h.Worker("boxed").Run(run), b)
	// starting: claimed, its supervisor has not written box.json yet.
	starting := f.add("starting", 1)
	if _, err := f.part("starting").Claim(ctx, starting[0], home.NewRunID(f.clock.Now())); err != nil {
		t.Fatal(err)
	}

	dir, job := blockingSweepJob(t, "sweep")
	d := f.dispatcher(Options{})
	d.o.SnapProgram, d.o.RunsProgram = job, job
	d.maybeDaily(ctx)
	waitFile(dir + "/sweeping")
	// While the sweep runs, nothing is claimed for the workers it sweeps.
	queued := f.add("quiet", 1)
	if rep := d.Tick(ctx); len(rep.Started) != 0 || f.claimed("quiet") != 0 {
		t.Fatalf("claimed for a worker being swept: %+v", rep.Started)
	}
	os.WriteFile(dir+"/release", nil, 0o644)
	d.WaitDaily()
	ran, _ := os.ReadFile(dir + "/ran")
	want := "sweep quiet --home " + f.h.Dir + "\nprune --home " + f.h.Dir + "\n"
	if string(ran) != want {
		t.Fatalf("daily jobs ran as %q, want %q", ran, want)
	}
	s, err := d.ReadState()
	if err != nil || s.Daily.Sweep != "ok" || strings.Join(s.Daily.Swept, ",") != "quiet" ||
		strings.Join(s.Daily.SweepSkipped, ",") != "boxed,starting" || s.Daily.Failed {
		t.Fatalf("dispatch.json: %+v, %v", s.Daily, err)
	}
	// After the sweep the held task is claimed.
	if rep := d.Tick(ctx); len(rep.Started) != 1 || rep.Started[0].Task != queued[0] {
		t.Fatalf("after the sweep: started %+v, want %s", rep.Started, queued[0])
	}

	// The next day every worker has a live claim: the sweep is skipped,
	// and dispatch.json says so; prune still runs.
	f.clock.add(24 * time.Hour)
	os.Remove(dir + "/ran")
	d = f.dispatcher(Options{})
	d.o.SnapProgram, d.o.RunsProgram = job, job
	d.maybeDaily(ctx)
	d.WaitDaily()
	if ran, _ := os.ReadFile(dir + "/ran"); string(ran) != "prune --home "+f.h.Dir+"\n" {
		t.Fatalf("with every worker busy the jobs ran as %q; want prune only", ran)
	}
	s, err = d.ReadState()
	if err != nil || !strings.HasPrefix(s.Daily.Sweep, "skipped") || len(s.Daily.Swept) != 0 || s.Daily.Failed || s.Daily.Day != d.Today() {
		t.Fatalf("dispatch.json with the sweep skipped: %+v, %v", s.Daily, err)
	}
}

// Containment, Locks: a worker whose partition lock is held (here by the
// test, as a flooding supervisor or a stuck process would) is skipped
// after PartitionWait, logged once, and the other worker is claimed for
// in the same tick; once the lock is free the skipped one is served.
func TestBusyPartitionIsSkippedAndOthersClaim(t *testing.T) {
	f := newFixture(t, "[dispatch]\ncap = 5\n")
	f.worker("stuck", "")
	f.worker("other", "")
	f.add("stuck", 1)
	f.add("other", 1)
	lk, err := fsx.LockPath(context.Background(), f.h.Worker("stuck").TasksLock(), false, 0)
	if err != nil {
		t.Fatal(err)
	}
	d := f.dispatcher(Options{})
	for i := 0; i < 2; i++ {
		d.Tick(context.Background())
		f.clock.add(2 * time.Second)
	}
	if f.claimed("other") != 1 {
		t.Fatalf("other was not claimed for while stuck's lock was held:\n%s", f.log)
	}
	if n := f.log.count("partition busy"); n != 1 {
		t.Fatalf("busy partition logged %d times over two ticks, want once:\n%s", n, f.log)
	}
	lk.Unlock()
	d.Tick(context.Background())
	if f.claimed("stuck") != 1 || f.log.count("partition free again") != 1 {
		t.Fatalf("stuck not served once its lock was free:\n%s", f.log)
	}
}

// The daily sweep goes in batches of SweepBatch and holds only the batch
// under way: a task filed for a worker of a later batch is claimed while
// an earlier batch is being swept, and every worker is swept once.
func TestSweepHoldsOnlyItsBatch(t *testing.T) {
	old := SweepBatch
	SweepBatch = 2
	defer func() { SweepBatch = old }()
	f := newFixture(t, "[dispatch]\ncap = 5\n")
	for _, w := range []string{"a1", "a2", "b1", "b2", "c1"} {
		f.worker(w, "")
	}
	ctx := context.Background()
	dir, job := blockingSweepJob(t, "sweep a1")
	d := f.dispatcher(Options{})
	d.o.SnapProgram, d.o.RunsProgram = job, job
	d.maybeDaily(ctx)
	waitFile(dir + "/sweeping")
	held := f.add("a2", 1)
	later := f.add("c1", 1)
	rep := d.Tick(ctx)
	if len(rep.Started) != 1 || rep.Started[0].Task != later[0] || f.claimed("a2") != 0 {
		t.Fatalf("while the first batch is swept: started %+v; want only c1's task (a2 is in the batch)", rep.Started)
	}
	os.WriteFile(dir+"/release", nil, 0o644)
	d.WaitDaily()
	ran, _ := os.ReadFile(dir + "/ran")
	want := "sweep a1 a2 --home " + f.h.Dir + "\nsweep b1 b2 --home " + f.h.Dir + "\nprune --home " + f.h.Dir + "\n"
	if string(ran) != want {
		t.Fatalf("daily jobs ran as %q, want %q (c1 has a live claim: skipped)", ran, want)
	}
	s, err := d.ReadState()
	if err != nil || s.Daily.Sweep != "ok" || strings.Join(s.Daily.Swept, ",") != "a1,a2,b1,b2" ||
		strings.Join(s.Daily.SweepSkipped, ",") != "c1" || s.Daily.Failed {
		t.Fatalf("dispatch.json: %+v, %v", s.Daily, err)
	}
	if rep := d.Tick(ctx); len(rep.Started) != 1 || rep.Started[0].Task != held[0] {
		t.Fatalf("after its batch: started %+v, want a2's %s", rep.Started, held[0])
	}
}

// blockingSweepJob writes a daily-job program that records its arguments
// in DIR/ran and, when its first words are first, touches DIR/sweeping and
// waits for DIR/release.
func blockingSweepJob(t *testing.T, first string) (dir, job string) {
	dir = t.TempDir()
	job = dir + "/job.sh"
	n := len(strings.Fields(first))
	args := strings.TrimSpace(strings.Repeat("$X ", n))
	for i := 1; i <= n; i++ {
		args = strings.Replace(args, "$X", "$"+strconv.Itoa(i), 1)
	}
	os.WriteFile(job, []byte(`#!/bin/sh
echo "$@" >> `+dir+`/ran
if [ "`+args+`" = "`+first+`" ]; then
	touch `+dir+`/sweeping
	while [ ! -e `+dir+`/release ]; do sleep 0.02; done
fi
`), 0o755)
	return dir, job
}

// waitFile waits until path exists.
func waitFile(path string) {
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
