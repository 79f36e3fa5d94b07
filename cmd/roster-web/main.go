// Command roster-web is the suite's web console (docs/web.md): `serve`
// shows the data tree in a browser — every worker, its tasks and runs,
// what each run did and cost, the gates waiting for a decision with
// their diffs, the conversations — and makes the three writes an operator
// makes from the command line (a gate's decision, pause/resume, requeue)
// through the same library calls. Loopback only unless given a
// certificate; every request needs the token in $ROSTER_HOME/web-token.
package main

import (
	"os"

	"github.com/roster-sh/roster/lib/cli"
)

// CLI is the grammar; each verb lives in its own file.
type CLI struct {
	cli.Globals

	Serve ServeCmd `cmd:"" help:"Serve the console (foreground; SIGTERM or Ctrl-C stops it). Prints a one-time login URL."`
}

func main() {
	os.Exit(cli.Main("roster-web", &CLI{}, os.Args[1:]))
}
