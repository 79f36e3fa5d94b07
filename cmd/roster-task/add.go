package main

import (
	"fmt"
	"runtime"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/tms"
)

// AddCmd is `roster-task add`.
type AddCmd struct {
	Worker   string   `arg:"" help:"The worker."`
	Text     []string `arg:"" help:"The task's text; \"-\" reads it from stdin (at most 64 KiB)."`
	At       string   `help:"Not before TIME: RFC 3339, \"YYYY-MM-DD HH:MM\" (host-local) or +DUR; a past time is due now." placeholder:"TIME"`
	After    []string `help:"Only after task ID has completed (repeatable)." placeholder:"ID"`
	Ceiling  string   `help:"Wall-clock limit of its run (default: org.toml [ceilings] filed)." placeholder:"DUR"`
	Standing string   `help:"owner (default) or proactive." enum:"owner,proactive" default:"owner"`
	Channel  *string  `help:"The conversation it belongs to." placeholder:"CHAN"`
	Priority int      `help:"Higher is claimed first within a standing." default:"0"`
	Retries  int      `help:"Retry a run attested failed (a ceiling, a refused credential included) up to N times under the same id, after org.toml [dispatch] retry_backoff." placeholder:"N" default:"0"`
}

func (c *AddCmd) Run(g *cli.Globals, env *cli.Env) error {
	ch, err := checkChannel(c.Channel)
	if err != nil {
		return err
	}
	p, err := openPartition(g, c.Worker)
	if err != nil {
		return err
	}
	text, err := readText(c.Text, env.Stdin)
	if err != nil {
		return err
	}
	nt := tms.NewTask{Text: text, Standing: c.Standing, After: c.After, Ceiling: c.Ceiling, Channel: ch, Priority: c.Priority, Retries: c.Retries}
	if c.At != "" {
		at, err := tms.ParseAt(c.At, p.Now(), p.Zone())
		if err != nil {
			return err
		}
		nt.At = &at
	}
	changeProcs()
	task, err := p.Add(env.Ctx, nt)
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, task.ID)
	return nil
}

// changeProcs gives the runtime at least changeMinProcs Ps before an add
// (or relay), the change that comes in floods. Its write waits in several
// fsyncs at once (lib/tms: the two files' and the journal's, then the
// folders' and the release of the files replaced), and a goroutine in a
// system call keeps its P until the runtime's monitor takes it back (20 µs
// to 10 ms later): with one P per core, on a 2-core host the journal's
// append waited 3.7 ms behind the two files' fsyncs (strace of one add at
// 9,900 pending). Not for every verb: more Ps than cores cost a CPU-bound
// one (ls of 10,000 tasks: 120 -> 136 ms of CPU, the garbage collector's
// idle workers), and a change's goroutines only wait.
func changeProcs() {
	if runtime.GOMAXPROCS(0) < changeMinProcs {
		runtime.GOMAXPROCS(changeMinProcs)
	}
}

// changeMinProcs is the widest step of a change's write: four goroutines
// in system calls at once (two folders' fsyncs, two releases).
const changeMinProcs = 4
