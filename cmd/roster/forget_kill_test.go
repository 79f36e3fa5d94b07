package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/snap"
	"github.com/roster-sh/roster/lib/tms"
)

// forgetHome is a home where real boxes served two relays of the channel
// "chat 1" and one of "other", with snapshots after each run, and one more
// relay of "chat 1" waiting.
func forgetHome(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "h")
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(binDir, args[0]), args[1:]...)
		cmd.Env = append(os.Environ(), "ROSTER_HOME="+dir, "ROSTER_EXEC_PATH="+binDir, "PATH="+binDir+":"+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("roster", "init")
	run("roster", "worker", "add", "dobby", "--command", "/bin/true", "--heartbeat", "off", "--uid", "291237")
	spec := filepath.Join(dir, "workers", "dobby.toml")
	data, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	cmdLine := `command = ["/bin/sh", "-c", "cat \"$ROSTER_BRIEFING\" >> $HOME/channel/store/said.txt; echo $ROSTER_TASK > $HOME/channel/store/last; echo mine >> $HOME/store/own.txt; roster-task complete"]`
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "command = ") {
			l = cmdLine
		}
		lines = append(lines, l)
	}
	if err := os.WriteFile(spec, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	run("roster-task", "relay", "dobby", "--channel", "chat 1", "--from", "alice", "the purple elephant sings")
	run("roster-task", "relay", "dobby", "--channel", "other", "a green giraffe dances")
	run("roster-dispatch", "--until-idle")
	run("roster-task", "relay", "dobby", "--channel", "chat 1", "--from", "alice", "the purple elephant sings again")
	run("roster-dispatch", "--until-idle")
	run("roster-task", "relay", "dobby", "--channel", "chat 1", "--from", "alice", "the purple elephant waits")
	return dir
}

// treeSums is the sha256 of every file below dir, by relative path.
func treeSums(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		data, _ := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = sha256.Sum256(data)
		return nil
	})
	return out
}

// phraseIn lists the files of the data tree whose bytes or name hold one
// of the conversation's words.
func phraseIn(dataDir string) []string {
	var hits []string
	filepath.WalkDir(dataDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if strings.Contains(d.Name(), "elephant") || strings.Contains(d.Name(), "chat%201") {
			hits = append(hits, p)
		}
		if d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			if bytes.Contains(data, []byte("purple elephant")) || bytes.Contains(data, []byte("alice")) {
				hits = append(hits, p)
			}
		}
		return nil
	})
	return hits
}

// everyFileParses checks tasks.json, the journal (but a torn last line),
// the view and every snapshot manifest.
func everyFileParses(t *testing.T, wdir string, round int) {
	t.Helper()
	for _, f := range []string{"tasks/tasks.json", "view/schedule.json"} {
		data, err := os.ReadFile(filepath.Join(wdir, f))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if _, err := tms.DecodeFile(f, data); err != nil {
			t.Fatalf("round %d: %s: %v", round, f, err)
		}
	}
	data, err := os.ReadFile(filepath.Join(wdir, "tasks/journal.jsonl"))
	if err != nil {
		t.Fatalf("round %d: %v", round, err)
	}
	for i, raw := range fsx.SplitLines(data) {
		if _, err := tms.DecodeLine(raw); err != nil {
			t.Fatalf("round %d: journal line %d: %v", round, i+1, err)
		}
	}
	ids, _ := filepath.Glob(filepath.Join(wdir, "store-snapshots", "2*"))
	for _, id := range ids {
		data, err := os.ReadFile(filepath.Join(id, "manifest.jsonl"))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if _, err := snap.ParseManifest(data); err != nil {
			t.Fatalf("round %d: %s: %v", round, id, err)
		}
	}
}

// TestForgetKilledAnywhereIsFinishedByTheNext kills `roster-task forget`
// at random instants (in a fresh copy of a home real boxes served each
// time); after each kill every file parses and fsck is clean, a second
// forget exits 0 and leaves no byte of the conversation in data/, the
// other channel and the worker's own store exactly as they were, one
// `forgotten` line and no intent record.
func TestForgetKilledAnywhereIsFinishedByTheNext(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("boxes need root and cgroups; CI runs as root")
	}
	rounds := 150
	if testing.Short() {
		rounds = 20
	}
	tmpl := forgetHome(t)
	wsub := filepath.Join("data", "workers", "dobby")
	before := phraseIn(filepath.Join(tmpl, "data"))
	if len(before) < 5 {
		t.Fatalf("the conversation is in only %d files before: %v", len(before), before)
	}
	otherSums := treeSums(t, filepath.Join(tmpl, wsub, "channel-stores", "other"))
	storeSums := treeSums(t, filepath.Join(tmpl, wsub, "store"))
	if len(otherSums) == 0 || len(storeSums) == 0 {
		t.Fatal("no files in the other channel store or the store")
	}
	forget := func(home string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(binDir, "roster-task"), "--home", home, "forget", "dobby", "--channel", "chat 1")
		cmd.Env = append(os.Environ(), "ROSTER_EXEC_PATH="+binDir)
		return cmd
	}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	var window time.Duration
	killed, finished, midway := 0, 0, 0
	start := time.Now()
	for r := 0; r < rounds; r++ {
		home := filepath.Join(t.TempDir(), "h")
		if out, err := exec.Command("cp", "-a", tmpl, home).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		wdir := filepath.Join(home, wsub)
		if r < 3 {
			// Uninterrupted forgets give the window the kills fall in:
			// the quickest of them.
			t0 := time.Now()
			if out, err := forget(home).CombinedOutput(); err != nil {
				t.Fatalf("forget: %v\n%s", err, out)
			}
			if d := time.Since(t0); window == 0 || d < window {
				window = d
			}
		} else {
			cmd := forget(home)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Duration(rng.Int63n(int64(window))))
			cmd.Process.Signal(syscall.SIGKILL)
			if err := cmd.Wait(); err != nil {
				killed++
				if _, err := os.Stat(filepath.Join(wdir, "tasks", "forget.json")); err == nil {
					midway++
				}
			} else {
				finished++
			}
			everyFileParses(t, wdir, r)
			if out, err := exec.Command(filepath.Join(binDir, "roster-task"), "--home", home, "fsck").CombinedOutput(); err != nil {
				t.Fatalf("round %d: fsck after the kill: %v\n%s", r, err, out)
			}
			if out, err := forget(home).CombinedOutput(); err != nil {
				t.Fatalf("round %d: the second forget: %v\n%s", r, err, out)
			}
		}
		everyFileParses(t, wdir, r)
		if out, err := exec.Command(filepath.Join(binDir, "roster-task"), "--home", home, "fsck").CombinedOutput(); err != nil {
			t.Fatalf("round %d: fsck: %v\n%s", r, err, out)
		}
		if hits := phraseIn(filepath.Join(home, "data")); len(hits) > 0 {
			t.Fatalf("round %d: the conversation is still in %v", r, hits)
		}
		if got := treeSums(t, filepath.Join(wdir, "channel-stores", "other")); fmt.Sprint(got) != fmt.Sprint(otherSums) {
			t.Fatalf("round %d: the other channel store changed", r)
		}
		if got := treeSums(t, filepath.Join(wdir, "store")); fmt.Sprint(got) != fmt.Sprint(storeSums) {
			t.Fatalf("round %d: the worker's store changed", r)
		}
		j, _ := os.ReadFile(filepath.Join(wdir, "tasks", "journal.jsonl"))
		if n := bytes.Count(j, []byte(`"event":"forgotten"`)); n != 1 {
			t.Fatalf("round %d: %d forgotten lines", r, n)
		}
		if !bytes.Contains(j, []byte("a green giraffe dances")) {
			t.Fatalf("round %d: the other channel's relay lost its words", r)
		}
		if _, err := os.Stat(filepath.Join(wdir, "tasks", "forget.json")); err == nil {
			t.Fatalf("round %d: the intent record is still there", r)
		}
		os.RemoveAll(filepath.Dir(home))
	}
	t.Logf("%d rounds in %v: %d forgets killed (%d midway, their intent record left), %d finished before the kill; window %v",
		rounds, time.Since(start).Round(time.Millisecond), killed, midway, finished, window)
}
