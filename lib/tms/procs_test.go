package tms

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// The test binary re-executes itself as a writer process (TMS_HELPER set):
// real processes, real flock, real kill -9.
func TestMain(m *testing.M) {
	if mode := os.Getenv("TMS_HELPER"); mode != "" {
		if strings.HasPrefix(mode, "k-") {
			os.Exit(killHelper(mode[2:]))
		}
		if mode == "index" {
			os.Exit(indexKillHelper())
		}
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

func helper(mode string) int {
	h, err := home.Open(os.Getenv("TMS_HOME"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	org, _ := config.ParseOrg("org.toml", nil)
	p, err := Open(h, "dobby", Options{Org: org, Worker: &config.Worker{Name: "dobby", Command: []string{"/bin/true"}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	n, _ := strconv.Atoi(os.Getenv("TMS_N"))
	out := bufio.NewWriter(os.Stdout)
	for i := 0; i < n; i++ {
		if mode == "set" && i%2 == 1 {
			f, err := p.Read(ctx)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			v := f.Version
			in := &SetInput{Version: &v, Tasks: f.Tasks, Templates: f.Templates}
			for k := range in.Tasks {
				in.Tasks[k].Priority++
			}
			if _, err := p.SetTasks(ctx, in, ByOwner); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			continue
		}
		t, err := p.Add(ctx, NewTask{Text: fmt.Sprintf("task %d of %d", i, os.Getpid())})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(out, t.ID)
		out.Flush() // printed = the add returned
	}
	return 0
}

func helperCmd(t *testing.T, h home.Home, mode string, n int) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TMS_HELPER="+mode, "TMS_HOME="+h.Dir, "TMS_N="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	return cmd
}

func TestConcurrentAddersEachAccountedOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("32 processes")
	}
	h := newHome(t, "dobby")
	const procs, each = 32, 50
	var wg sync.WaitGroup
	errc := make(chan error, procs)
	for i := 0; i < procs; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, err := helperCmd(t, h, "add", each).Output(); err != nil {
				errc <- fmt.Errorf("%v: %s", err, out)
			} else if got := strings.Count(string(out), "\n"); got != each {
				errc <- fmt.Errorf("a process printed %d ids", got)
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	p, _ := open(t, h, "dobby")
	f := mustRead(t, p)
	if len(f.Tasks) != procs*each || f.Version != procs*each {
		t.Fatalf("%d pending tasks at version %d", len(f.Tasks), f.Version)
	}
	j := mustJournal(t, p)
	filed := 0
	for i, l := range j {
		if l.Seq != int64(i+1) || l.Version != int64(i+1) {
			t.Fatalf("line %d: seq %d version %d", i+1, l.Seq, l.Version)
		}
		if l.Event == EvFiled {
			filed++
		}
	}
	if filed != procs*each {
		t.Fatalf("%d filed lines", filed)
	}
	mustClean(t, p)
}

func TestKilledWritersLoseNothingAndTearNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("hundreds of kills")
	}
	h := newHome(t, "dobby")
	p, _ := open(t, h, "dobby")
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	printed := map[string]bool{}
	const rounds = 300
	deadline := time.Now().Add(45 * time.Second)
	r := 0
	for ; r < rounds && time.Now().Before(deadline); r++ {
		mode := "add"
		if r%3 == 2 {
			mode = "set"
		}
		cmd := helperCmd(t, h, mode, 1000)
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = nil
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
		time.Sleep(time.Duration(5000+rng.Intn(60000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
		cmd.Wait()
		// Whatever the instant: tasks.json parses, and the journal has no
		// torn line but possibly the last.
		if _, err := readFile(p.W.TasksFile()); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
		data, _ := os.ReadFile(p.W.Journal())
		for i, raw := range fsx.SplitLines(data) {
			if _, err := DecodeLine(raw); err != nil {
				t.Fatalf("round %d: journal line %d torn: %v", r, i+1, err)
			}
		}
	}
	t.Logf("%d kills, %d ids printed", r, len(printed))
	// The next writer rolls forward and truncates a torn tail.
	mustAdd(t, p, NewTask{Text: "after the storm"})
	mustClean(t, p)
	f := mustRead(t, p)
	for id := range printed {
		if f.Task(id) == nil {
			t.Fatalf("add printed %s but it is gone", id)
		}
	}
	// Every filed line that landed is present (roll-forward), exactly once.
	seen := map[string]bool{}
	for _, l := range mustJournal(t, p) {
		if l.Event == EvFiled {
			if seen[l.Task] {
				t.Fatalf("%s filed twice", l.Task)
			}
			seen[l.Task] = true
			if f.Task(l.Task) == nil {
				t.Fatalf("journaled %s missing from tasks.json", l.Task)
			}
		}
	}
	if len(seen) != len(f.Tasks) {
		t.Fatalf("%d filed lines, %d tasks", len(seen), len(f.Tasks))
	}
	_ = json.Marshal
}
