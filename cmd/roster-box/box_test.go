package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/box"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
	"github.com/roster-sh/roster/lib/tms"
)

// job is what the worker's command runs: store/job.sh, written per case.
var job = []string{"sh", "/home/worker/store/job.sh"}

func (f *fixture) setJob(script string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.w.Store(), "job.sh"), []byte(script+"\n"), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func TestHostAttestsTheOutcome(t *testing.T) {
	f := newFixture(t, job, "")
	cases := []struct {
		name, script  string
		ceiling       string
		attested      string
		ended, report string
		note, reason  string
		ceilingHit    bool
	}{
		{"exit 0 and complete", "roster-task complete 'all done'", "", tms.AttestedCompleted, "done", "complete", "", "", false},
		{"exit 0 without a report", "true", "", tms.AttestedFailed, "done", "none", "no report", "", false},
		{"exit 3 after complete", "roster-task complete; exit 3", "", tms.AttestedFailed, "error", "complete", "", "", false},
		{"fail with a reason", "roster-task fail 'the disk is full'", "", tms.AttestedFailed, "done", "fail", "", "the disk is full", false},
		{"ceiling", "sleep 987654 & sleep 987654 & roster-task complete; sleep 987654", "2s", tms.AttestedFailed, "ceiling", "complete", "", "", true},
		{"pending gate", "roster-task propose 'push branch docs' && roster-task complete", "", tms.AttestedNeedsReview, "done", "complete", "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.setJob(c.script)
			rec, task := f.dispatch(tms.NewTask{Text: c.name, Ceiling: c.ceiling})
			if rec.Attested != c.attested || rec.Ended != c.ended || rec.Report.Status != c.report {
				t.Fatalf("attested %q ended %q report %q; want %q %q %q\n%s", rec.Attested, rec.Ended, rec.Report.Status,
					c.attested, c.ended, c.report, f.transcript(rec.ID))
			}
			ev := rec.Evidence
			if ev == nil || ev.Ceiling != c.ceilingHit || !strings.Contains(ev.Note, c.note) || ev.Reason != c.reason {
				t.Fatalf("evidence %+v", ev)
			}
			got, err := f.part.Show(context.Background(), task)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != c.attested {
				t.Fatalf("task state %q, want %q", got.State, c.attested)
			}
			if c.ceilingHit {
				if box.Running(rec.ID) {
					t.Fatal("the box outlived its ceiling")
				}
				out, _ := exec.Command("pgrep", "-u", strconv.Itoa(f.uid), "-f", "sleep 987654").Output()
				if len(strings.TrimSpace(string(out))) > 0 {
					t.Fatalf("processes of the box user survive the ceiling: %s", out)
				}
			}
			if rec.Cost.CPUSeconds <= 0 || rec.Cost.MemoryPeakBytes == 0 {
				t.Fatalf("no cgroup usage recorded: %+v", rec.Cost)
			}
		})
	}
}

func TestBoxIsIsolated(t *testing.T) {
	f := newFixture(t, job, "")
	// A port on the host's loopback, which the box must not reach.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	// Another worker's store, and a setuid-root program left in the store.
	other := f.h.Worker("other").Store()
	os.MkdirAll(other, 0o700)
	suid := filepath.Join(f.w.Store(), "suid-id")
	data, _ := os.ReadFile("/usr/bin/id")
	os.WriteFile(suid, data, 0o755)
	os.Chmod(suid, 0o4755)

	probe := `
check() { if eval "$2" >/dev/null 2>&1; then echo "ok $1"; else echo "FAIL $1"; fi; }
check shadow-absent '! test -e /etc/shadow'
check data-tree-absent '! test -e ` + f.h.Data() + `'
check other-store-absent '! test -e ` + other + `'
check no-host-loopback '! bash -c "exec 3<>/dev/tcp/127.0.0.1/` + port + `"'
check self-ro '! touch ~/self/x'
check view-ro '! touch ~/self/view/x'
check usr-ro '! touch /usr/x'
check root-ro '! touch /x'
check uid 'test "$(id -u)" = ` + strconv.Itoa(f.uid) + `'
check no-caps 'grep -q "^CapEff:[[:space:]]*0000000000000000$" /proc/self/status'
check no-userns '! unshare -U true'
check no-mount '! mount -t tmpfs none /tmp'
check nosuid-store 'test "$(~/store/suid-id -u)" = ` + strconv.Itoa(f.uid) + `'
check store-mount-nosuid 'grep " /home/worker/store " /proc/self/mountinfo | grep -q nosuid'
check env-exact 'test "$(env | cut -d= -f1 | grep -v "^PWD$\|^SHLVL$\|^_$" | sort | tr "\n" " ")" = "GIT_CONFIG_GLOBAL GIT_TERMINAL_PROMPT HOME HTTPS_PROXY HTTP_PROXY NO_PROXY PATH ROSTER_BRIEFING ROSTER_GATEWAY ROSTER_OUTBOX ROSTER_RUN ROSTER_TASK ROSTER_TASKS_FILE ROSTER_WORKER http_proxy https_proxy no_proxy "'
check pid1-reaper 'test "$(cat /proc/1/cmdline | tr "\0" " ")" = "/opt/roster/bin/roster-reaper --status-fd=3 --gateway=127.0.0.1:3128,/run/roster/gateway.sock --knowledge=http://127.0.0.1:3128/git/knowledge,run/$ROSTER_RUN,/run/roster/knowledge -- sh /home/worker/store/job.sh "'
check store-writable 'echo hi > ~/store/made-in-box'
check tools-on-path 'command -v roster-lock && command -v roster-task'
check lock-works 'roster-lock store --shared -- true'
roster-task complete
`
	f.setJob(probe)
	t.Setenv("SECRET_HOST_VAR", "leak")
	rec, _ := f.dispatch(tms.NewTask{Text: "probe"})
	out := f.transcript(rec.ID)
	if strings.Contains(out, "FAIL") || strings.Count(out, "ok ") != 19 {
		t.Fatalf("isolation probes:\n%s", out)
	}
	// The control: the same port is reachable from the host.
	if c, err := net.Dial("tcp", "127.0.0.1:"+port); err != nil {
		t.Fatalf("control: the host cannot reach its own port: %v", err)
	} else {
		c.Close()
	}
	st, err := os.Stat(filepath.Join(f.w.Store(), "made-in-box"))
	if err != nil {
		t.Fatal(err)
	}
	if uid := st.Sys().(*syscall.Stat_t).Uid; int(uid) != f.uid {
		t.Fatalf("file made in the box is owned by %d, want the box user %d", uid, f.uid)
	}
	if rec.Attested != tms.AttestedCompleted {
		t.Fatalf("attested %s", rec.Attested)
	}
}

func TestScheduleChangesShowThroughDuringARun(t *testing.T) {
	f := newFixture(t, job, "")
	f.setJob(`for i in $(seq 200); do grep -q MARK-1234 ~/self/schedule.json && { roster-task complete seen; exit 0; }; sleep 0.1; done; exit 1`)
	task, run := f.claim(tms.NewTask{Text: "watch"})
	done := make(chan int)
	go func() { code, _, _ := f.box("run", "dobby", "--task", task, "--run", run); done <- code }()
	waitFor(t, func() bool { _, err := runs.ReadBoxInfo(f.w.Run(run)); return err == nil && box.Running(run) })
	if _, err := f.part.Add(context.Background(), tms.NewTask{Text: "MARK-1234"}); err != nil {
		t.Fatal(err)
	}
	<-done
	rec, _ := runs.ReadRecord(f.w.Run(run))
	if rec.Attested != tms.AttestedCompleted {
		t.Fatalf("the box did not see the host's change: %+v\n%s", rec, f.transcript(run))
	}
}

func TestActionsFromTheBox(t *testing.T) {
	f := newFixture(t, job, "")
	f.setJob(`
roster-task file 'step two' ; echo "file:$?"
v=$(sed -n 's/.*"version": *\([0-9]*\).*/\1/p' "$ROSTER_TASKS_FILE" | head -n 1)
echo '{"tasks":[],"templates":[]}' > /tmp/set.json
roster-task set --version 1 /tmp/set.json ; echo "stale:$?"
roster-task set --version "$v" /tmp/set.json ; echo "set:$?"
roster-task propose 'delete the old branch' ; echo "propose:$?"
printf garbage > ~/self/outbox/tmp/g && mv ~/self/outbox/tmp/g ~/self/outbox/new/900.json
ln -s /etc/passwd ~/self/outbox/new/901.json
mkfifo ~/self/outbox/new/902.json
head -c 2097152 /dev/zero > ~/self/outbox/tmp/big && mv ~/self/outbox/tmp/big ~/self/outbox/new/903.json
mv ~/self/outbox/new ~/self/outbox/stolen ; echo "replace-new:$?"
roster-task complete ; echo "complete:$?"
`)
	rec, task := f.dispatch(tms.NewTask{Text: "owner's ask"})
	out := f.transcript(rec.ID)
	for _, want := range []string{"file:0", "stale:13", "set:0", "propose:0", "complete:0"} {
		if !strings.Contains(out, want) {
			t.Errorf("transcript lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "replace-new:0") {
		t.Error("the box could rename its outbox's new/ folder")
	}
	kinds := map[string]int{}
	refused := 0
	var filed string
	for _, a := range rec.Actions {
		kinds[a.Kind]++
		if strings.HasPrefix(a.Outcome, "refused") {
			refused++
		}
		if a.Kind == "file" {
			filed = a.Task
		}
	}
	if refused != 5 || rec.Evidence.RefusedActions != 5 { // stale set + 4 hostile entries
		t.Errorf("refused %d (evidence %d), want 5: %+v", refused, rec.Evidence.RefusedActions, rec.Actions)
	}
	if rec.Attested != tms.AttestedNeedsReview {
		t.Errorf("attested %q, want needs-review (a gate is pending)", rec.Attested)
	}
	// Filed from an owner's filed task: owner standing (docs/tasks.md).
	nt, err := f.part.Show(context.Background(), filed)
	if err != nil || nt.Standing != tms.Owner || nt.By != tms.ByWorker {
		t.Errorf("filed task %s: %+v, %v; want owner standing, by worker", filed, nt, err)
	}
	// Every action and refusal is journaled.
	lines, err := f.part.Journal(0)
	if err != nil {
		t.Fatal(err)
	}
	actions := 0
	hostile := map[int]string{}
	for _, l := range lines {
		if l.Event == tms.EvAction && l.Run == rec.ID {
			actions++
			if l.Action.Kind == tms.ActInvalid {
				hostile[l.Action.N] = l.Action.Outcome
			}
			if l.By != tms.ByWorker || l.Task != task || l.Version != 0 {
				t.Errorf("action line %+v: want by worker, task %s, no version", l, task)
			}
		}
	}
	if actions != len(rec.Actions) {
		t.Errorf("%d action lines in the journal for %d actions", actions, len(rec.Actions))
	}
	// The garbage, the symlink, the FIFO and the 2 MiB file: each journaled
	// as an invalid action whose outcome says why.
	for n, why := range map[int]string{900: "not a valid action", 901: "symlink", 902: "not a regular file", 903: "over 1048576 bytes"} {
		if o := hostile[n]; !strings.HasPrefix(o, "refused: bad action: ") || !strings.Contains(o, why) {
			t.Errorf("journal for hostile entry %d: outcome %q, want a refusal mentioning %q", n, o, why)
		}
	}
	if len(hostile) != 4 {
		t.Errorf("invalid actions journaled: %v, want 900-903", hostile)
	}

	// From an ad-hoc run a filed task is proactive.
	code, _, errb := f.box("run", "dobby", "--", "sh", "-c", "roster-task file 'from adhoc'")
	if code != 0 {
		t.Fatalf("ad-hoc file: exit %d %s", code, errb)
	}
	ad := f.lastRun()
	if len(ad.Actions) != 1 {
		t.Fatalf("ad-hoc actions %+v", ad.Actions)
	}
	nt, _ = f.part.Show(context.Background(), ad.Actions[0].Task)
	if nt.Standing != tms.Proactive {
		t.Errorf("task filed from an ad-hoc run has standing %q, want proactive", nt.Standing)
	}
}

func TestAdhocRunPassesTheExitStatusAndIsRecorded(t *testing.T) {
	f := newFixture(t, job, "")
	code, _, errb := f.box("run", "dobby", "--", "sh", "-c", "exit 7")
	if code != 7 {
		t.Fatalf("exit %d, want 7: %s", code, errb)
	}
	rec := f.lastRun()
	if rec.Kind != "adhoc" || rec.ExitCode == nil || *rec.ExitCode != 7 || rec.Ended != "error" || rec.Attested != "" {
		t.Fatalf("record %+v", rec)
	}
}

// ROSTER_BOX_TRACE=1 prints, after the run, each step of the box's start
// and end in the order passed (roster-box(1), ENVIRONMENT).
func TestTraceShowsWhereABoxsTimeGoes(t *testing.T) {
	f := newFixture(t, job, "")
	t.Setenv("ROSTER_BOX_TRACE", "1")
	code, _, errb := f.box("run", "dobby", "--", "true")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	at := 0
	for _, step := range []string{"roster-box started", "host cgroup", "spec, org and partition read", "run folder", "prepared",
		"container made", "container started", "box exited", "destroyed", "recorded", "done"} {
		i := strings.Index(errb[at:], "roster-box: trace: "+step+" ")
		if i < 0 {
			t.Fatalf("step %q missing or out of order in:\n%s", step, errb)
		}
		at += i
	}
}

// A command killed by a signal is recorded with that signal, beside the
// 128+N status roster-box exits with; one exiting 143 by choice is not.
func TestAdhocRunKilledBySignalRecordsTheSignal(t *testing.T) {
	f := newFixture(t, job, "")
	code, _, errb := f.box("run", "dobby", "--", "sh", "-c", "kill -TERM $$")
	if code != 143 {
		t.Fatalf("exit %d, want 143: %s", code, errb)
	}
	rec := f.lastRun()
	if rec.ExitCode == nil || *rec.ExitCode != 143 || rec.Signal != "SIGTERM" || rec.Ended != "error" {
		t.Fatalf("record %+v", rec)
	}
	code, _, errb = f.box("run", "dobby", "--", "sh", "-c", "exit 143")
	if code != 143 {
		t.Fatalf("exit %d, want 143: %s", code, errb)
	}
	if rec := f.lastRun(); rec.Signal != "" {
		t.Fatalf("a chosen exit 143 recorded as signal %q", rec.Signal)
	}
}

func TestSupervisorKilledThenReaped(t *testing.T) {
	f := newFixture(t, job, "")
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "run", "dobby", "--home", f.h.Dir, "--", "sleep", "1000")
	cmd.Env = append(os.Environ(), "ROSTER_BOX_AS_MAIN=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var run string
	waitFor(t, func() bool {
		ents, _ := os.ReadDir(f.w.Runs())
		if len(ents) == 0 {
			return false
		}
		run = ents[0].Name()
		return box.Running(run)
	})
	info, err := runs.ReadBoxInfo(f.w.Run(run))
	if err != nil || !info.Alive() {
		t.Fatalf("box.json %+v %v: not alive while running", info, err)
	}
	code, out, _ := f.box("ps", "--json")
	if code != 0 || !strings.Contains(out, `"run":"`+run+`"`) {
		t.Fatalf("ps: %d %s", code, out)
	}
	if code, _, _ := f.box("reap", run); code != 13 {
		t.Fatalf("reap of a live run: exit %d, want 13", code)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if info.Alive() {
		t.Fatal("liveness says alive after SIGKILL")
	}
	if !box.Running(run) {
		t.Fatal("the container did not outlive its supervisor (nothing to reap)")
	}
	cg, err := box.HostCgroupDir(box.HostCgroupName(f.h.Dir, "dobby"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cg); err != nil {
		t.Fatalf("the killed supervisor's cgroup: %v", err)
	}
	if code, _, errb := f.box("reap", run[:len(run)-2]); code != 0 {
		t.Fatalf("reap: exit %d: %s", code, errb)
	}
	if box.Running(run) {
		t.Fatal("reap left the container running")
	}
	if _, err := os.Stat(cg); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("reap left the killed supervisor's cgroup %s: %v", cg, err)
	}
	rec, err := runs.ReadRecord(f.w.Run(run))
	if err != nil || rec.Ended != "error" || rec.Evidence == nil || rec.Evidence.Note != "supervisor lost" {
		t.Fatalf("record after reap: %+v %v", rec, err)
	}
}

func TestKillEndsALiveBox(t *testing.T) {
	f := newFixture(t, job, "")
	f.setJob("sleep 1000")
	task, run := f.claim(tms.NewTask{Text: "long"})
	done := make(chan int)
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "run", "dobby", "--home", f.h.Dir, "--task", task, "--run", run)
	cmd.Env = append(os.Environ(), "ROSTER_BOX_AS_MAIN=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); done <- cmd.ProcessState.ExitCode() }()
	waitFor(t, func() bool { return box.Running(run) })
	if code, _, errb := f.box("kill", run); code != 0 {
		t.Fatalf("kill: exit %d: %s", code, errb)
	}
	if code := <-done; code != 0 {
		t.Fatalf("supervisor exit %d after kill", code)
	}
	rec, _ := runs.ReadRecord(f.w.Run(run))
	if rec.Ended != "error" || rec.Evidence.Note != "killed" || rec.Attested != tms.AttestedFailed {
		t.Fatalf("record %+v %+v", rec, rec.Evidence)
	}
	if code, _, _ := f.box("kill", run); code != 13 {
		t.Fatalf("kill of a dead run: exit %d, want 13", code)
	}
}

func TestConnectionsListsWhatBoxesAreGiven(t *testing.T) {
	f := newFixture(t, job, "[[connection]]\nname = \"docs\"\npath = \"/srv/docs\"\nat = \"docs\"\nmode = \"ro\"")
	code, out, errb := f.box("connections", "dobby", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r connRow
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		names = append(names, r.Name+":"+r.Mode)
	}
	if got := strings.Join(names, " "); got != "store:rw locks:rw view:ro runs:ro docs:ro" {
		t.Fatalf("connections %q", got)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("timed out waiting")
}

var _ = home.NewRunID
