package main

// End-to-end tests of the dispatcher with real boxes: the suite is built
// once into a temporary folder (roster-box with cgo and seccomp, the rest
// static), and each test runs the real roster-dispatch against a fresh
// home. They need root (containers); CI runs as root.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/roster-sh/roster/internal/testbin"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

var bin string

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Geteuid() != 0 || testing.Short() {
		os.Exit(m.Run()) // the tests skip themselves, saying why
	}
	dir, remove := testbin.Temp()
	bin = dir
	code := m.Run()
	remove()
	os.Exit(code)
}

type env struct {
	t *testing.T
	h home.Home
}

func newEnv(t *testing.T, org string) *env {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: boxes are real containers (CI runs as root)")
	}
	if testing.Short() {
		t.Skip("-short: no real boxes")
	}
	e := &env{t: t, h: home.Home{Dir: t.TempDir()}}
	t.Cleanup(e.quiesce) // before the temporary home is removed
	e.run("roster-task", "init")
	if org != "" {
		if err := os.WriteFile(e.h.OrgFile(), []byte(org), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *env) cmd(prog string, args ...string) *exec.Cmd {
	c := exec.Command(filepath.Join(bin, prog), args...)
	c.Env = append(os.Environ(), "ROSTER_HOME="+e.h.Dir, "ROSTER_EXEC_PATH="+bin)
	return c
}

// run runs a suite program and returns its stdout, failing on an error.
func (e *env) run(prog string, args ...string) string {
	e.t.Helper()
	var out, errb bytes.Buffer
	c := e.cmd(prog, args...)
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		e.t.Fatalf("%s %s: %v\n%s%s", prog, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return strings.TrimSpace(out.String())
}

// worker adds a worker whose command is sh -c SCRIPT.
func (e *env) worker(name, script string, spec ...string) {
	e.t.Helper()
	e.run("roster-task", "worker", "add", name, "--heartbeat", "off", "--command", "/bin/sh", "--command=-c", "--command", script)
	if len(spec) > 0 {
		f, err := os.OpenFile(e.h.SpecFile(name), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			e.t.Fatal(err)
		}
		fmt.Fprintln(f, strings.Join(spec, "\n"))
		f.Close()
	}
}

func (e *env) add(worker, text string, args ...string) string {
	return e.run("roster-task", append([]string{"add", worker, text}, args...)...)
}

// dispatcher is a running roster-dispatch with its log.
type dispatcher struct {
	c      *exec.Cmd
	log    *syncBuf
	end    chan error
	exited chan struct{} // closed when the process has exited
}

var logMu sync.Mutex

type syncBuf struct {
	buf bytes.Buffer
}

func (e *env) start(args ...string) *dispatcher {
	e.t.Helper()
	d := &dispatcher{c: e.cmd("roster-dispatch", args...), log: &syncBuf{}, end: make(chan error, 1), exited: make(chan struct{})}
	pr, pw, _ := os.Pipe()
	d.c.Stderr = pw
	if err := d.c.Start(); err != nil {
		e.t.Fatal(err)
	}
	pw.Close()
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			logMu.Lock()
			d.log.buf.WriteString(sc.Text() + "\n")
			logMu.Unlock()
		}
		close(done)
	}()
	go func() { err := d.c.Wait(); close(d.exited); <-done; d.end <- err }()
	e.t.Cleanup(func() {
		d.c.Process.Signal(syscall.SIGKILL)
		<-d.exited
	})
	return d
}

func (d *dispatcher) logText() string {
	logMu.Lock()
	defer logMu.Unlock()
	return d.log.buf.String()
}

// wait waits for the dispatcher to exit and returns its exit code.
func (d *dispatcher) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case err := <-d.end:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(within):
		t.Fatalf("roster-dispatch still running after %s\n%s", within, d.logText())
	}
	return -1
}

// quiesce ends whatever boxes a test left running and waits until no
// process of this home is left (every suite program the dispatcher or a
// supervisor starts is given --home), so nothing writes into the home
// while the test's cleanup removes it.
func (e *env) quiesce() {
	e.killBoxes()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		left := e.processes()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Errorf("processes of the home still running: %v", left)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processes lists the running processes whose command line names this
// home.
func (e *env) processes() []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, p := range ents {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cl, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cl, []byte(e.h.Dir)) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
				continue // exited, not yet reaped by its parent
			}
		}
		out = append(out, p.Name()+": "+string(bytes.ReplaceAll(bytes.TrimRight(cl, "\x00"), []byte{0}, []byte{' '})))
	}
	return out
}

// killBoxes ends whatever boxes a test left running.
func (e *env) killBoxes() {
	ws, _ := runs.DataWorkers(e.h)
	for _, w := range ws {
		live, _ := runs.LiveBoxes(e.h.Worker(w))
		for _, b := range live {
			exec.Command(filepath.Join(bin, "roster-box"), "kill", b.Run, "--home", e.h.Dir).Run()
		}
	}
}

// containers counts this home's runs whose container exists (libcontainer
// state under /run/roster): the boxes themselves, whatever their
// supervisors are still doing after them.
func (e *env) containers() int {
	n := 0
	list, _ := runs.List(e.h, runs.Filter{})
	for _, r := range list {
		if _, err := os.Stat(filepath.Join(home.ContainerRoot, home.ContainerID(r.ID), "state.json")); err == nil {
			n++
		}
	}
	return n
}

// claims counts a worker's claimed tasks: what the cap counts.
func (e *env) claims(worker string) int {
	data, _ := os.ReadFile(e.h.Worker(worker).TasksFile())
	f, err := tms.DecodeFile("tasks.json", data)
	if err != nil {
		return 0
	}
	n := 0
	for _, t := range f.Tasks {
		if t.State == tms.Claimed {
			n++
		}
	}
	return n
}

func (e *env) live() int {
	n := 0
	ws, _ := runs.DataWorkers(e.h)
	for _, w := range ws {
		live, _ := runs.LiveBoxes(e.h.Worker(w))
		n += len(live)
	}
	return n
}

// eventually polls cond until it holds; the limit is generous on purpose:
// these tests assert outcomes, never speed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// journal reads a worker's complete journal lines. The tests read it while
// supervisors and dispatchers append to it, so the last line may be one
// half-written (a read can see an append's first page before its last) or
// torn by a kill -9: it is left out, as every reader of the journal leaves
// it (fsx.SplitLines); any other line that does not parse fails the test.
func (e *env) journal(worker string) []tms.Line {
	e.t.Helper()
	data, _ := os.ReadFile(e.h.Worker(worker).Journal())
	var out []tms.Line
	for _, l := range fsx.SplitLines(data) {
		var line tms.Line
		if err := json.Unmarshal(l, &line); err != nil {
			e.t.Fatalf("journal line %q: %v", l, err)
		}
		out = append(out, line)
	}
	return out
}

func (e *env) events(worker, event, task string) int {
	n := 0
	for _, l := range e.journal(worker) {
		if l.Event == event && (task == "" || l.Task == task) {
			n++
		}
	}
	return n
}

// runOf returns the one run record of task.
func (e *env) runOf(worker, task string) *runs.Record {
	e.t.Helper()
	list, err := runs.List(e.h, runs.Filter{Workers: []string{worker}, Task: task})
	if err != nil || len(list) != 1 || list[0].Record == nil {
		e.t.Fatalf("runs of %s: %v %v", task, list, err)
	}
	return list[0].Record
}

func TestFiledTaskRunsAttestedWithFullRunRecord(t *testing.T) {
	e := newEnv(t, "")
	e.worker("dobby", `case "$(cat "$ROSTER_BRIEFING")" in
*"write a note"*) echo working; echo note > ~/store/note.txt; roster-task complete "wrote a note";;
*"fail please"*) echo failing >&2; exit 3;;
*) sleep 600;;
esac`)
	ok := e.add("dobby", "write a note")
	bad := e.add("dobby", "fail please")
	slow := e.add("dobby", "sleep past the ceiling", "--ceiling", "2s")
	d := e.start("--until-idle", "--cap", "3")
	if code := d.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, d.logText())
	}

	r := e.runOf("dobby", ok)
	if r.Attested != "completed" || r.Ended != "done" || r.Report.Status != "complete" {
		t.Fatalf("completed task's run: attested %q ended %q report %+v", r.Attested, r.Ended, r.Report)
	}
	dir := e.h.Worker("dobby").Run(r.ID)
	for _, f := range []string{home.Briefing(dir), home.Transcript(dir), home.Recall(dir)} {
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
			t.Fatalf("run record lacks %s: %v", filepath.Base(f), err)
		}
	}
	if tr, _ := os.ReadFile(home.Transcript(dir)); !strings.Contains(string(tr), "working") {
		t.Fatalf("transcript: %q", tr)
	}
	if r.Cost.WallSeconds <= 0 {
		t.Fatalf("no cost recorded: %+v", r.Cost)
	}
	if !home.IsSnapshotID(r.Snapshot) {
		t.Fatalf("snapshot after a run that changed the store: %q", r.Snapshot)
	}
	if e.events("dobby", tms.EvCompleted, ok) != 1 {
		t.Fatal("completed not journaled once")
	}

	r = e.runOf("dobby", bad)
	if r.Attested != "failed" || r.Evidence == nil || r.Evidence.Exit != 3 || r.Evidence.Report != "none" {
		t.Fatalf("failing task's run: attested %q evidence %+v", r.Attested, r.Evidence)
	}
	r = e.runOf("dobby", slow)
	if r.Attested != "failed" || r.Ended != "ceiling" || r.Evidence == nil || !r.Evidence.Ceiling {
		t.Fatalf("over-ceiling task's run: attested %q ended %q evidence %+v", r.Attested, r.Ended, r.Evidence)
	}
}

func TestCapHoldsWithRealBoxes(t *testing.T) {
	e := newEnv(t, "[dispatch]\ncap = 2\n")
	e.worker("dobby", `sleep 1; roster-task complete`, "concurrency = 6")
	for i := 0; i < 6; i++ {
		e.add("dobby", fmt.Sprintf("task %d", i))
	}
	d := e.start("--until-idle")
	most := 0
	stop := make(chan struct{})
	sampled := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				sampled <- n
				return
			default:
			}
			most = max(most, e.containers(), e.claims("dobby"))
			n++
			time.Sleep(20 * time.Millisecond)
		}
	}()
	code := d.wait(t, 3*time.Minute)
	close(stop)
	samples := <-sampled
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, d.logText())
	}
	if most > 2 || most == 0 {
		t.Fatalf("at most %d live boxes seen in %d samples; cap is 2", most, samples)
	}
	if n := e.events("dobby", tms.EvCompleted, ""); n != 6 {
		t.Fatalf("%d of 6 tasks completed", n)
	}
}

func TestRestartMidFlightAdoptsLiveBoxes(t *testing.T) {
	e := newEnv(t, "")
	// Each box waits for a go file in its store, so the test decides when
	// they end.
	e.worker("dobby", `while [ ! -e ~/store/go ]; do sleep 0.1; done; roster-task complete`, "concurrency = 3")
	for i := 0; i < 3; i++ {
		e.add("dobby", fmt.Sprintf("task %d", i))
	}
	d1 := e.start()
	eventually(t, "3 live boxes", func() bool { return e.live() == 3 })
	d1.c.Process.Signal(syscall.SIGKILL)
	d1.wait(t, time.Minute)

	d2 := e.start("--until-idle")
	time.Sleep(time.Second) // let it reclaim and tick with the 3 still running
	if e.live() != 3 {
		t.Fatalf("live boxes after the restart: %d, want the same 3", e.live())
	}
	os.WriteFile(filepath.Join(e.h.Worker("dobby").Store(), "go"), nil, 0o644)
	if code := d2.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, d2.logText())
	}
	list, _ := runs.List(e.h, runs.Filter{})
	if len(list) != 3 {
		t.Fatalf("%d runs, want 3: the boxes were restarted", len(list))
	}
	if c, done := e.events("dobby", tms.EvClaimed, ""), e.events("dobby", tms.EvCompleted, ""); c != 3 || done != 3 {
		t.Fatalf("claimed %d, completed %d; want each task claimed and attested once", c, done)
	}
	if strings.Contains(d2.logText(), "reclaimed") {
		t.Fatalf("a live box was reclaimed:\n%s", d2.logText())
	}
}

func TestKilledSupervisorIsReclaimedAndRunsAgain(t *testing.T) {
	e := newEnv(t, "")
	e.worker("dobby", `if [ -e ~/store/first ]; then roster-task complete "second try"; else touch ~/store/first; sleep 600; fi`)
	task := e.add("dobby", "survive")
	d := e.start("--until-idle")
	var b runs.BoxInfo
	eventually(t, "the box's command running", func() bool {
		_, err := os.Stat(filepath.Join(e.h.Worker("dobby").Store(), "first"))
		return err == nil
	})
	eventually(t, "a live box", func() bool {
		live, _ := runs.LiveBoxes(e.h.Worker("dobby"))
		if len(live) == 1 {
			b = live[0]
		}
		return len(live) == 1
	})
	syscall.Kill(b.PID, syscall.SIGKILL)
	if code := d.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, d.logText())
	}
	t.Logf("dispatcher log:\n%s\nruns:\n%s", d.logText(), e.run("roster-runs", "ls"))
	if n := e.events("dobby", tms.EvReclaimed, task); n != 1 {
		t.Fatalf("reclaimed %d times, want 1\n%s", n, d.logText())
	}
	// The reap records the run's end (and keeps box.json): the task is
	// reclaimed in the same pass, not after the 30 s start grace.
	if strings.Contains(d.logText(), "reclaim deferred") {
		t.Fatalf("the reclaim of a young claim whose supervisor died was deferred:\n%s", d.logText())
	}
	var attempts = -1
	for _, l := range e.journal("dobby") {
		if l.Event == tms.EvReclaimed {
			var rec struct {
				Attempts int `json:"attempts"`
			}
			raw, _ := json.Marshal(l.Records[0])
			json.Unmarshal(raw, &rec)
			attempts = rec.Attempts
		}
	}
	if attempts != 1 {
		t.Fatalf("attempts after the reclaim: %d, want 1", attempts)
	}
	if e.events("dobby", tms.EvCompleted, task) != 1 {
		t.Fatal("the reclaimed task did not run again to completion")
	}
	lost, _ := runs.ReadRecord(e.h.Worker("dobby").Run(b.Run))
	if lost == nil || lost.Ended != "error" {
		t.Fatalf("the lost run's record: %+v", lost)
	}
}

func TestCredentialFileHoldResumesWithoutRestart(t *testing.T) {
	key := filepath.Join(t.TempDir(), "model-key")
	e := newEnv(t, fmt.Sprintf("[dispatch]\ncredentials = [\"file:%s\"]\n", key))
	e.worker("dobby", `roster-task complete`)
	task := e.add("dobby", "held")
	d := e.start("--poll", "200ms")
	eventually(t, "the hold logged", func() bool { return strings.Contains(d.logText(), "dispatch held") })
	time.Sleep(time.Second) // a few polls while held
	if e.events("dobby", tms.EvClaimed, task) != 0 {
		t.Fatal("claimed while no credential was present")
	}
	os.WriteFile(key, []byte("sk-test\n"), 0o600)
	eventually(t, "the task completed", func() bool { return e.events("dobby", tms.EvCompleted, task) == 1 })
	d.c.Process.Signal(syscall.SIGTERM)
	d.wait(t, time.Minute)
	if n := strings.Count(d.logText(), "dispatch held"); n != 1 {
		t.Fatalf("hold logged %d times, want once\n%s", n, d.logText())
	}
	if n := strings.Count(d.logText(), "dispatch hold ended"); n != 1 {
		t.Fatalf("hold end logged %d times, want once\n%s", n, d.logText())
	}
}

func TestCredentialEnvReadAtStart(t *testing.T) {
	e := newEnv(t, "[dispatch]\ncredentials = [\"env:ROSTER_TEST_MODEL_KEY\"]\n")
	e.worker("dobby", `roster-task complete`)
	task := e.add("dobby", "needs a key")
	c := e.cmd("roster-dispatch", "--until-idle")
	c.Env = append(c.Env, "ROSTER_TEST_MODEL_KEY=")
	if out, err := c.CombinedOutput(); err != nil || e.events("dobby", tms.EvClaimed, task) != 0 {
		t.Fatalf("without the variable: %v, claimed %d\n%s", err, e.events("dobby", tms.EvClaimed, task), out)
	}
	c = e.cmd("roster-dispatch", "--until-idle")
	c.Env = append(c.Env, "ROSTER_TEST_MODEL_KEY=sk-test")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if e.events("dobby", tms.EvCompleted, task) != 1 {
		t.Fatal("a dispatcher started with the variable set did not run the task")
	}
}

func TestPausedAndCorruptWorkersHeldOthersRun(t *testing.T) {
	e := newEnv(t, "")
	e.worker("good", `roster-task complete`)
	e.worker("napping", `roster-task complete`)
	e.worker("broken", `roster-task complete`)
	good := e.add("good", "run me")
	nap := e.add("napping", "not now")
	e.add("broken", "cannot")
	e.run("roster-task", "worker", "pause", "napping")
	os.WriteFile(e.h.SpecFile("broken"), []byte("command = [\n"), 0o644)
	d := e.start("--until-idle")
	if code := d.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, d.logText())
	}
	if e.events("good", tms.EvCompleted, good) != 1 {
		t.Fatal("the good worker's task did not run")
	}
	if e.events("napping", tms.EvClaimed, nap) != 0 {
		t.Fatal("a paused worker's task was claimed")
	}
	if n := strings.Count(d.logText(), "worker=broken"); n != 1 {
		t.Fatalf("the corrupt spec was logged %d times, want once\n%s", n, d.logText())
	}
}

func TestSecondDispatcherExits11AndSIGTERMLeavesBoxes(t *testing.T) {
	e := newEnv(t, "")
	e.worker("dobby", `echo waiting; while [ ! -e ~/store/go ]; do sleep 0.1; done; echo going; roster-task complete`)
	task := e.add("dobby", "outlive the dispatcher")
	d := e.start()
	eventually(t, "a live box", func() bool { return e.live() == 1 })

	var errb bytes.Buffer
	c := e.cmd("roster-dispatch", "--once")
	c.Stderr = &errb
	err := c.Run()
	ee, _ := err.(*exec.ExitError)
	if ee == nil || ee.ExitCode() != 11 || !strings.Contains(errb.String(), fmt.Sprintf("pid %d", d.c.Process.Pid)) {
		t.Fatalf("second dispatcher: %v, stderr %q; want exit 11 naming pid %d", err, errb.String(), d.c.Process.Pid)
	}

	d.c.Process.Signal(syscall.SIGTERM)
	if code := d.wait(t, time.Minute); code != 0 {
		t.Fatalf("SIGTERM: exit %d, want 0", code)
	}
	if e.live() != 1 {
		t.Fatal("the box did not survive the dispatcher's SIGTERM")
	}
	// roster-runs log --follow tails the live box and ends with the run.
	live, _ := runs.LiveBoxes(e.h.Worker("dobby"))
	var follow bytes.Buffer
	fc := e.cmd("roster-runs", "log", "--follow", live[0].Run)
	fc.Stdout = &follow
	if err := fc.Start(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(e.h.Worker("dobby").Store(), "go"), nil, 0o644)
	eventually(t, "the orphaned box attested", func() bool { return e.events("dobby", tms.EvCompleted, task) == 1 })
	if err := fc.Wait(); err != nil {
		t.Fatalf("roster-runs log --follow: %v", err)
	}
	if follow.String() != "waiting\ngoing\n" {
		t.Fatalf("log --follow printed %q", follow.String())
	}
}

// TestFinishingSupervisorLeavesItsCapSlot: the cap counts boxes, not
// supervisors. While one worker's supervisor is finishing (its box ended,
// its post-run snapshot waiting for the store lock), another worker's
// task starts and runs under cap = 1.
func TestFinishingSupervisorLeavesItsCapSlot(t *testing.T) {
	e := newEnv(t, "[dispatch]\ncap = 1\n")
	e.worker("first", `echo x > ~/store/x; roster-task complete`)
	e.worker("second", `roster-task complete`)
	// Hold first's store lock shared: its box may mount (shared), its
	// snapshot (exclusive) waits until the lock is released.
	lk, err := os.Open(filepath.Join(e.h.Worker("first").Locks(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	if err := syscall.Flock(int(lk.Fd()), syscall.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	d := e.start()
	a := e.add("first", "one")
	eventually(t, "first's task attested while its snapshot waits", func() bool {
		return e.events("first", tms.EvCompleted, a) == 1
	})
	if e.live() != 1 {
		t.Fatalf("%d live supervisors, want first's, finishing", e.live())
	}
	b := e.add("second", "two")
	eventually(t, "second's task to run while first's supervisor finishes", func() bool {
		return e.events("second", tms.EvCompleted, b) == 1
	})
	r := e.runOf("first", a)
	if r.EndedAt == nil || r.Snapshot != "" {
		t.Fatalf("first's run is not finishing: ended %v snapshot %q", r.EndedAt, r.Snapshot)
	}
	syscall.Flock(int(lk.Fd()), syscall.LOCK_UN)
	eventually(t, "first's snapshot after the lock is released", func() bool {
		r := e.runOf("first", a)
		return home.IsSnapshotID(r.Snapshot) && r.Cost.SnapshotSeconds > 0
	})
	d.c.Process.Signal(syscall.SIGTERM)
	if code := d.wait(t, time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, d.logText())
	}
}

// TestRequeueOfAFailedFirstTaskRunsTheChain: a chain of three tasks whose
// first fails; once what broke it is fixed, requeueing it (same id, twice:
// the second changes nothing) runs it again and then the two after it,
// each once; show lists both attempts of the first.
func TestRequeueOfAFailedFirstTaskRunsTheChain(t *testing.T) {
	e := newEnv(t, "")
	e.worker("dobby", `t=$(cat ~/store/"$ROSTER_TASK")
[ "$t" != first ] || [ -e ~/store/fixed ] || { echo "not fixed yet" >&2; exit 3; }
echo "$t" >> ~/store/ran
roster-task complete`)
	a := e.add("dobby", "first")
	b := e.add("dobby", "second", "--after", a)
	c := e.add("dobby", "third", "--after", b)
	for id, name := range map[string]string{a: "first", b: "second", c: "third"} {
		if err := os.WriteFile(filepath.Join(e.h.Worker("dobby").Store(), id), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d := e.start("--until-idle")
	if code := d.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, d.logText())
	}
	if e.events("dobby", tms.EvFailed, a) != 1 {
		t.Fatalf("first did not fail once\n%s", d.logText())
	}
	if due := e.run("roster-task", "due", "dobby"); !strings.Contains(due, "blocked by failed "+a) {
		t.Fatalf("second is not blocked by the failed first:\n%s", due)
	}

	// Fix it, requeue it: the same id, journaled requeued; again: nothing.
	store := e.h.Worker("dobby").Store()
	if err := os.WriteFile(filepath.Join(store, "fixed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if id := e.run("roster-task", "requeue", a); id != a {
		t.Fatalf("requeue printed %q, want the same id %s", id, a)
	}
	c2 := e.cmd("roster-task", "requeue", a)
	out, err := c2.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "already pending") {
		t.Fatalf("second requeue: %v\n%s", err, out)
	}
	if n := strings.Count(e.run("roster-task", "ls", "dobby"), "first"); n != 1 {
		t.Fatalf("%d pending copies of the first task", n)
	}

	d = e.start("--until-idle")
	if code := d.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, d.logText())
	}
	for _, id := range []string{a, b, c} {
		if e.events("dobby", tms.EvCompleted, id) != 1 {
			t.Fatalf("%s not completed once\n%s", id, d.logText())
		}
	}
	ran, _ := os.ReadFile(filepath.Join(store, "ran"))
	if string(ran) != "first\nsecond\nthird\n" {
		t.Fatalf("ran %q, want each once, in order", ran)
	}
	show := e.run("roster-task", "show", a)
	if !regexp.MustCompile(`(?m)^history 1: +failed .*run `).MatchString(show) ||
		!regexp.MustCompile(`(?m)^history 2: +requeued `).MatchString(show) ||
		!regexp.MustCompile(`(?m)^history 3: +completed .*run `).MatchString(show) {
		t.Fatalf("show does not list both attempts:\n%s", show)
	}
}

// TestMisconfiguredWorkerIsHeldNotFailed: a worker whose [[connection]]
// path is missing, or whose spec has no command, is held: its tasks stay
// pending (never claimed to fail), due and worker ls say why, the hold is
// logged once when it starts and once when it ends, and once the spec or
// the path is fixed the task runs.
func TestMisconfiguredWorkerIsHeldNotFailed(t *testing.T) {
	e := newEnv(t, "[dispatch]\npoll = \"200ms\"\n")
	grant := filepath.Join(t.TempDir(), "docs")
	e.worker("dobby", `cat ~/docs/readme && roster-task complete`,
		"[[connection]]", `name = "docs"`, `path = "`+grant+`"`, `at = "docs"`, `mode = "ro"`)
	e.run("roster-task", "worker", "add", "elf", "--heartbeat", "off") // no command
	a := e.add("dobby", "read the docs")
	b := e.add("elf", "do something")
	d := e.start()
	eventually(t, "both holds logged", func() bool {
		return strings.Count(d.logText(), `msg="worker held`) >= 2
	})
	due := e.run("roster-task", "due")
	if !strings.Contains(due, "held: connection docs: "+grant+" is missing") || !strings.Contains(due, "held: no command in its spec") {
		t.Fatalf("due does not say why:\n%s", due)
	}
	ls := e.run("roster-task", "worker", "ls")
	if !strings.Contains(ls, "connection docs: "+grant+" is missing") {
		t.Fatalf("worker ls does not say why:\n%s", ls)
	}
	if conns := e.run("roster-box", "connections", "dobby", "--json"); !strings.Contains(conns, `"name":"docs"`) ||
		!strings.Contains(conns, `"problem":"missing"`) {
		t.Fatalf("connections does not flag the missing path:\n%s", conns)
	}
	if err := os.MkdirAll(grant, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(grant, "readme"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "dobby's task to run once its path exists", func() bool {
		return e.events("dobby", tms.EvCompleted, a) == 1
	})
	eventually(t, "the end of dobby's hold logged", func() bool {
		return strings.Contains(d.logText(), `msg="worker hold ended" worker=dobby`)
	})
	for _, w := range []string{"dobby", "elf"} {
		if e.events(w, tms.EvFailed, "") != 0 || e.events(w, tms.EvClaimed, "") > 1 {
			t.Fatalf("%s: a held worker's task was claimed to fail\n%s", w, d.logText())
		}
	}
	if e.events("elf", tms.EvClaimed, b) != 0 {
		t.Fatalf("elf's task was claimed while elf has no command")
	}
	d.c.Process.Signal(syscall.SIGTERM)
	if code := d.wait(t, time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, d.logText())
	}
	log := d.logText()
	if n := strings.Count(log, `msg="worker held: claiming nothing for it" worker=dobby`); n != 1 {
		t.Fatalf("dobby's hold logged %d times, want once\n%s", n, log)
	}
	if n := strings.Count(log, `msg="worker held: claiming nothing for it" worker=elf`); n != 1 {
		t.Fatalf("elf's hold logged %d times, want once\n%s", n, log)
	}
}

// TestDispatchedChannelTaskGetsExactlyItsChannelStore: a dispatched task
// of a channel has that channel's store at ~/channel/store and no other
// channel's: what one conversation's runs write, another's never see.
func TestDispatchedChannelTaskGetsExactlyItsChannelStore(t *testing.T) {
	e := newEnv(t, "")
	e.worker("dobby", `ls -A ~/channel/store > ~/store/seen-$ROSTER_TASK
echo "$ROSTER_TASK" > ~/channel/store/by-$ROSTER_TASK
roster-task complete`)
	a := e.add("dobby", "first in C1", "--channel", "slack:C1")
	b := e.add("dobby", "first in C2", "--channel", "slack:C2/th 1")
	c := e.add("dobby", "second in C1", "--channel", "slack:C1", "--after", a, "--after", b)
	d := e.start("--until-idle")
	if code := d.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, d.logText())
	}
	for _, id := range []string{a, b, c} {
		if e.events("dobby", tms.EvCompleted, id) != 1 {
			t.Fatalf("%s did not complete\n%s", id, d.logText())
		}
	}
	w := e.h.Worker("dobby")
	list := func(channel string) string {
		dir, err := w.ChannelStore(channel)
		if err != nil {
			t.Fatal(err)
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return strings.Join(names, " ")
	}
	seen := func(id string) string {
		data, err := os.ReadFile(filepath.Join(w.Store(), "seen-"+id))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(string(data)), " ")
	}
	want1 := strings.Join([]string{"by-" + a, "by-" + c}, " ")
	if a > c {
		want1 = strings.Join([]string{"by-" + c, "by-" + a}, " ")
	}
	if got := list("slack:C1"); got != want1 {
		t.Fatalf("C1's store holds %q, want %q", got, want1)
	}
	if got := list("slack:C2/th 1"); got != "by-"+b {
		t.Fatalf("C2's store holds %q, want only by-%s", got, b)
	}
	if seen(a) != "" || seen(b) != "" || seen(c) != "by-"+a {
		t.Fatalf("the runs saw: %s %q, %s %q, %s %q", a, seen(a), b, seen(b), c, seen(c))
	}
}

// TestOrphanedRunIsReapedAtStart: an ad-hoc run's supervisor killed -9
// leaves its container and a run.json with no end, and no claim refers to
// it (the same as a supervisor killed after attesting): the next
// dispatcher reaps it, so the container is destroyed and the end recorded.
func TestOrphanedRunIsReapedAtStart(t *testing.T) {
	e := newEnv(t, "")
	e.worker("dobby", "true")
	c := e.cmd("roster-box", "run", "dobby", "--", "sleep", "1000")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var b runs.BoxInfo
	eventually(t, "a live ad-hoc box", func() bool {
		live, _ := runs.LiveBoxes(e.h.Worker("dobby"))
		if len(live) == 1 {
			b = live[0]
		}
		return len(live) == 1 && containerStarted(b.Run)
	})
	c.Process.Kill()
	c.Wait()
	if rec, _ := runs.ReadRecord(e.h.Worker("dobby").Run(b.Run)); rec == nil || rec.EndedAt != nil || !containerExists(b.Run) {
		t.Fatalf("not an orphan: record %+v, container running %v", rec, containerExists(b.Run))
	}
	d := e.start("--until-idle")
	if code := d.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, d.logText())
	}
	if containerExists(b.Run) {
		t.Fatalf("the orphan's container is still running\n%s", d.logText())
	}
	rec, err := runs.ReadRecord(e.h.Worker("dobby").Run(b.Run))
	if err != nil || rec.EndedAt == nil || rec.Ended != "error" || !strings.Contains(d.logText(), "reaped a run whose supervisor died unrecorded") {
		t.Fatalf("record %+v %v\n%s", rec, err, d.logText())
	}
}

// containerExists reports whether libcontainer keeps a folder for run's
// container (reap removes it).
func containerExists(run string) bool {
	_, err := os.Stat(home.ContainerDir(run))
	return err == nil
}

// containerStarted reports whether run's container has been started
// (libcontainer writes its state.json then).
func containerStarted(run string) bool {
	_, err := os.Stat(filepath.Join(home.ContainerDir(run), "state.json"))
	return err == nil
}
