package fsx

// Fault tests: real writer processes (this test binary re-executed in a
// helper mode) killed with SIGKILL at random instants, and many writers at
// once. The contents are self-validating (a checksum over the rest), so a
// torn or mixed write cannot pass for a whole one.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv("FSX_FAULT_HELPER"); mode != "" {
		if err := faultHelper(mode, os.Getenv("FSX_FAULT_PATH"), os.Getenv("FSX_FAULT_ID")); err != nil {
			fmt.Fprintln(os.Stderr, "fault helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// record is one self-validating write: Sum covers Writer, N and Pad.
type record struct {
	Writer int    `json:"w"`
	N      int    `json:"n"`
	Pad    string `json:"pad"`
	Sum    string `json:"sum"`
}

func sumOf(r record) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%d/%d/%s", r.Writer, r.N, r.Pad)))
	return hex.EncodeToString(h[:8])
}

func newRecord(w, n, padLen int) []byte {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	pad := make([]byte, padLen)
	for i := range pad {
		pad[i] = letters[rand.IntN(len(letters))]
	}
	r := record{Writer: w, N: n, Pad: string(pad)}
	r.Sum = sumOf(r)
	data, _ := json.Marshal(r)
	return data
}

// checkRecord parses one write and verifies its checksum.
func checkRecord(data []byte) (record, error) {
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("does not parse (%d bytes): %v", len(data), err)
	}
	if r.Sum != sumOf(r) {
		return r, fmt.Errorf("checksum mismatch (%d bytes)", len(data))
	}
	return r, nil
}

// faultHelper is the writer process. It prints "go" once it is about to
// write, then writes until killed (or, for "append-n", a fixed count).
func faultHelper(mode, path, id string) error {
	w, _ := strconv.Atoi(id)
	ctx := context.Background()
	switch mode {
	case "replace":
		fmt.Println("go")
		for n := 1; ; n++ {
			if err := WriteFile(path, newRecord(w, n, rand.IntN(256<<10)), 0o644); err != nil {
				return err
			}
		}
	case "append-n", "append-forever":
		f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		count, size := 100, 64
		if mode == "append-forever" {
			count, size = 1<<30, 256<<10
		}
		fmt.Println("go")
		for n := 0; n < count; n++ {
			l, err := LockPath(ctx, path+".lock", false, Forever)
			if err != nil {
				return err
			}
			if _, err := RepairTail(f); err != nil {
				return err
			}
			if err := AppendLine(f, newRecord(w, n, rand.IntN(size))); err != nil {
				return err
			}
			l.Unlock()
		}
		return f.Close()
	}
	return fmt.Errorf("unknown mode %q", mode)
}

// helper starts the writer and returns once it said "go".
func startHelper(t *testing.T, mode, path string, id int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FSX_FAULT_HELPER="+mode, "FSX_FAULT_PATH="+path, "FSX_FAULT_ID="+strconv.Itoa(id))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "go\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper did not start: %q %v", line, err)
	}
	return cmd
}

func killAfter(cmd *exec.Cmd, d time.Duration) {
	time.Sleep(d)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
}

// killWindow is the span a kill lands in at random, steered after each
// kill so that about half of the writers get a write done first (a
// narrower window after one did, a wider one after one did not): the kills
// land before, during and after whole writes whatever the machine's speed
// (a fixed window on a loaded machine, whose fsyncs are slow, let almost
// no write finish).
type killWindow time.Duration

func (w killWindow) random() time.Duration {
	return time.Duration(rand.Int64N(int64(w)) + 1)
}

func (w *killWindow) steer(wrote bool) {
	if wrote {
		*w = *w * 2 / 3
	} else {
		*w = *w * 3 / 2
	}
}

// TestWriteFileKilledAnywhereLeavesOldOrNew: a replace loop killed with
// SIGKILL at random instants always leaves one whole record.
func TestWriteFileKilledAnywhereLeavesOldOrNew(t *testing.T) {
	kills := 200
	if testing.Short() {
		kills = 20
	}
	p := filepath.Join(t.TempDir(), "state.json")
	if err := WriteFile(p, newRecord(0, 0, 10), 0o644); err != nil {
		t.Fatal(err)
	}
	changed := 0
	last := 0
	window := killWindow(10 * time.Millisecond)
	for i := 0; i < kills; i++ {
		cmd := startHelper(t, "replace", p, i+1)
		killAfter(cmd, window.random())
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("kill %d: %v", i, err)
		}
		r, err := checkRecord(data)
		if err != nil {
			t.Fatalf("kill %d: the file is torn: %v", i, err)
		}
		if r.Writer != last {
			changed++
			last = r.Writer
		}
		window.steer(r.Writer == i+1)
	}
	t.Logf("%d kills, %d of them after the writer had replaced the file", kills, changed)
	if changed == 0 {
		t.Error("no writer ever got a replace done: the test exercised nothing")
	}
}

// TestAppendsUnderLockFromManyProcessesAllPresent: 16 processes x 100
// appends under one LockPath lock; every line present once and whole.
func TestAppendsUnderLockFromManyProcessesAllPresent(t *testing.T) {
	procs := 16
	if testing.Short() {
		procs = 4
	}
	p := filepath.Join(t.TempDir(), "journal.jsonl")
	var cmds []*exec.Cmd
	for w := 0; w < procs; w++ {
		cmds = append(cmds, startHelper(t, "append-n", p, w))
	}
	for w, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("writer %d: %v", w, err)
		}
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 || data[len(data)-1] != '\n' {
		t.Fatal("journal does not end with a whole line")
	}
	seen := map[[2]int]bool{}
	for i, l := range SplitLines(data) {
		r, err := checkRecord(l)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		k := [2]int{r.Writer, r.N}
		if seen[k] {
			t.Fatalf("line %d: writer %d append %d twice", i+1, r.Writer, r.N)
		}
		seen[k] = true
	}
	if len(seen) != procs*100 {
		t.Errorf("%d distinct appends, want %d", len(seen), procs*100)
	}
}

// TestAppendKilledMidLineLeavesOnlyATornTail: a writer of long lines killed
// with SIGKILL at random instants leaves at most its last line torn, and
// RepairTail (run by the next writer under the lock) removes it.
func TestAppendKilledMidLineLeavesOnlyATornTail(t *testing.T) {
	kills := 30
	if testing.Short() {
		kills = 5
	}
	p := filepath.Join(t.TempDir(), "journal.jsonl")
	torn := 0
	lines := 0
	window := killWindow(30 * time.Millisecond)
	for i := 0; i < kills; i++ {
		cmd := startHelper(t, "append-forever", p, i)
		killAfter(cmd, window.random())
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		whole := SplitLines(data)
		for j, l := range whole {
			if _, err := checkRecord(l); err != nil {
				t.Fatalf("kill %d: complete line %d is bad: %v", i, j+1, err)
			}
		}
		window.steer(len(whole) > lines)
		lines = len(whole)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			torn++
			f, err := os.OpenFile(p, os.O_RDWR|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := RepairTail(f); err != nil {
				t.Fatal(err)
			}
			f.Close()
			after, _ := os.ReadFile(p)
			if len(after) > 0 && after[len(after)-1] != '\n' || len(SplitLines(after)) != len(whole) {
				t.Fatalf("kill %d: RepairTail left a torn or shortened file", i)
			}
		}
	}
	t.Logf("%d kills, %d left a torn last line, %d whole lines at the end", kills, torn, lines)
	if lines == 0 {
		t.Error("no append ever completed: the test exercised nothing")
	}
}
