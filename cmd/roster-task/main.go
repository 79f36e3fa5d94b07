// Command roster-task is the task management system's command line (docs/tools.md,
// "roster-task"). On the host it manages homes, workers and partitions;
// inside a box (ROSTER_OUTBOX set) the same binary speaks for the worker
// through the run's outbox (docs/dispatch-and-box.md, "Actions").
//
// Short-lived: the runtime's container-aware GOMAXPROCS probing (it reads
// /proc/self/cgroup, mountinfo and the CPU quota at every start) costs more
// than this program's whole job, so it is off.
//
// A change of a partition waits in several fsyncs at once (lib/tms: the
// two files' and the journal's, then the folders'), and a goroutine in a
// system call keeps its P until the runtime's monitor takes it back (20
// µs to 10 ms later): with one P per core, on a 2-core host the third
// fsync started milliseconds after the first two. So main gives the
// runtime at least minProcs Ps; what runs at once is still bounded by the
// cores, and this program is never CPU-bound for long.
//
//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0
package main

import (
	"os"
	"runtime"

	"github.com/roster-sh/roster/lib/cli"
)

// CLI is the host grammar. Each group of verbs lives in its own file.
type CLI struct {
	cli.Globals

	Init     InitCmd   `cmd:"" help:"Create data/ (mode 0700) and a commented org.toml in the home."`
	Worker   WorkerCmd `cmd:"" help:"Add, list, remove, pause and resume workers."`
	Key      KeyCmd    `cmd:"" help:"Model keys: put one in the vault from stdin, see which source each provider uses."`
	Forget   ForgetCmd `cmd:"" help:"Remove a conversation for good: its tasks, channel store, snapshots' copies, runs and words in the journal."`
	TaskCmds `embed:""`
}

// minProcs is the Ps main asks for: every fsync of a change's widest step
// at once, and the goroutine that waits for them.
const minProcs = 5

func main() {
	if runtime.GOMAXPROCS(0) < minProcs {
		runtime.GOMAXPROCS(minProcs)
	}
	args := fixArgs(os.Args[1:])
	if os.Getenv("ROSTER_OUTBOX") != "" {
		os.Exit(cli.Main("roster-task", &InboxCLI{}, args))
	}
	os.Exit(cli.Main("roster-task", &CLI{}, args))
}
