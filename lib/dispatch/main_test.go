package dispatch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/tms"
)

// fakeBoxEnv makes this test binary act as `roster-box run` for the
// dispatcher it is started by (see fakeBox).
const fakeBoxEnv = "ROSTER_DISPATCH_TEST_BOX"

func TestMain(m *testing.M) {
	if os.Getenv(fakeBoxEnv) != "" {
		if err := fakeBox(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "fake box:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeBox is a supervisor whose claim goes away before it writes box.json
// (its task canceled while it starts: a real supervisor then records the
// run canceled). It cancels its own task, so nothing on disk says it is
// still running, lingers, then makes its last write into the run folder.
// Args: run W --task T --run R --home H.
func fakeBox(args []string) error {
	if len(args) == 4 && args[0] == "reap" && args[1] == "--cgroups" {
		return nil // the dispatcher's sweep: this fake leaves no cgroup
	}
	if len(args) != 8 || args[0] != "run" {
		return fmt.Errorf("unexpected arguments %q", args)
	}
	worker, task, run, dir := args[1], args[3], args[5], args[7]
	h := home.Home{Dir: dir}
	p, err := tms.Open(h, worker, tms.Options{})
	if err != nil {
		return err
	}
	if _, err := p.Cancel(context.Background(), task, "canceled while its box started", tms.ByOwner); err != nil {
		return err
	}
	time.Sleep(time.Second)
	return os.WriteFile(filepath.Join(h.Worker(worker).Run(run), "last-write"), nil, 0o644)
}

// --until-idle returns only when every process it started has exited: a
// supervisor whose claim is gone and that never wrote box.json is still
// its child, writing into the home (run.json, the post-run snapshot), and
// whoever runs --until-idle (cron, a test removing the home) must not
// race it.
func TestUntilIdleWaitsForEverySupervisorItStarted(t *testing.T) {
	f := newFixture(t, "")
	f.worker("dobby", "")
	ids := f.add("dobby", 1)
	t.Setenv(fakeBoxEnv, "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	d := f.dispatcher(Options{UntilIdle: true, BoxProgram: exe})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := d.Run(ctx); err != nil || ctx.Err() != nil {
		t.Fatalf("run: %v, %v\n%s", err, ctx.Err(), f.log)
	}
	w := f.h.Worker("dobby")
	var runs []string
	for _, l := range readJournal(t, w) {
		if l.Event == tms.EvClaimed && l.Task == ids[0] {
			runs = append(runs, l.Run)
		}
	}
	if len(runs) != 1 {
		t.Fatalf("claims of the task: %v, want 1\n%s", runs, f.log)
	}
	if _, err := os.Stat(filepath.Join(w.Run(runs[0]), "last-write")); err != nil {
		t.Fatalf("--until-idle returned before the supervisor it started had exited: %v\n%s", err, f.log)
	}
}
