// Command roster-box runs one governed box (docs/tools.md, "roster-box"): the
// supervisor the dispatcher starts for a claimed task, ad-hoc runs with
// the terminal attached, and the commands that list, kill and clean up
// boxes. It is the suite's one cgo binary (libcontainer, libseccomp, both
// linked in statically by make build) and re-executes itself as the
// container's init: it starts twice per box, so keep it small.
package main

import (
	"os"
	"path/filepath"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	_ "github.com/opencontainers/runc/libcontainer/nsenter"

	"github.com/roster-sh/roster/lib/box"
	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/repos"
)

// started is when the main package was initialised (ROSTER_BOX_TRACE's
// origin): after the Go runtime and every other package.
var started = time.Now()

func init() {
	if len(os.Args) > 1 && os.Args[1] == "init" {
		// The container's init: runs before main, after nsenter's nsexec().
		libcontainer.Init()
	}
}

// CLI is roster-box's grammar.
type CLI struct {
	cli.Globals

	Run         RunCmd         `cmd:"" help:"Run a box: a claimed task (--task, --run; what the dispatcher runs) or ad hoc in the foreground (on a terminal, ~. at the start of a line ends it, as ssh's escape)."`
	Ps          PsCmd          `cmd:"" help:"List the live boxes of every worker."`
	Kill        KillCmd        `cmd:"" help:"End a live box now (recorded as ended error, note killed)."`
	Exec        ExecCmd        `cmd:"" help:"Run a command inside a live box (as docker exec): the box user's uid, no capabilities, the box's seccomp; recorded in the run's exec.jsonl."`
	Reap        ReapCmd        `cmd:"" help:"After a dead supervisor: destroy a container that outlived it and record the run's end; --cgroups: remove the empty supervisor cgroups."`
	Connections ConnectionsCmd `cmd:"" help:"List what each worker's boxes are given: store, locks, channel stores, granted folders."`
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == box.GitHookCommand && os.Args[2] == "pre-receive" {
		// roster's pre-receive hook, run by the gateway's git receive-pack
		// (lib/repos): not a command for people, so not in the grammar.
		os.Exit(repos.HookMain(os.Stdin, os.Stderr))
	}
	// One roster-box runs per box: git's version line is kept on the host's
	// runtime tmpfs rather than asked of git at every gateway run's start.
	repos.VersionCache = filepath.Join(home.ContainerRoot, "git-version")
	os.Exit(cli.Main("roster-box", &CLI{}, os.Args[1:]))
}
