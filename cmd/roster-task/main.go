// Command roster-task is the task management system's command line (docs/tools.md,
// "roster-task"). On the host it manages homes, workers and partitions;
// inside a box (ROSTER_OUTBOX set) the same binary speaks for the worker
// through the run's outbox (docs/dispatch-and-box.md, "Actions").
//
// Short-lived: the runtime's container-aware GOMAXPROCS (a CPU quota kept
// open and re-read while it runs) is off. The runtime still reads
// /proc/self/cgroup, mountinfo and the quota once at start, to count the
// setting's effect (0.2 ms of an add's CPU here): nothing a program sets
// skips that, as roster-lock's main.go says.
//
//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0
package main

import (
	"os"

	"github.com/roster-sh/roster/lib/cli"
)

// CLI is the host grammar. Each group of verbs lives in its own file.
type CLI struct {
	cli.Globals

	Init     InitCmd   `cmd:"" help:"Create data/ (mode 0700) and a commented org.toml in the home."`
	Worker   WorkerCmd `cmd:"" help:"Add, list, remove, pause and resume workers."`
	Key      KeyCmd    `cmd:"" help:"Model keys: put one in the vault from stdin, see which source each provider uses."`
	Forget   ForgetCmd `cmd:"" help:"Remove a conversation for good: its tasks, channel store, snapshots' copies, runs and words in the journal."`
	Doctor   DoctorCmd `cmd:"" help:"Check the host and the home: cgroups, kernel, filesystem, space, vault modes, every config problem, agents, credentials, git, chat servers; each problem with its fix (exit 1 when one is found)."`
	TaskCmds `embed:""`
}

func main() {
	args := fixArgs(os.Args[1:])
	if os.Getenv("ROSTER_OUTBOX") != "" {
		os.Exit(cli.Main("roster-task", &InboxCLI{}, args))
	}
	os.Exit(cli.Main("roster-task", &CLI{}, args))
}
