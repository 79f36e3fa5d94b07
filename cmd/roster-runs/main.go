// Command roster-runs reads the permanent record of runs (docs/tools.md,
// "roster-runs"; docs/dispatch-and-box.md, "Run records"): list, show, the
// briefing and why, the transcript, the store changes, the gateway's
// ledger, usage over runs, and pruning.
//
// A run is named by any unique prefix of its id, across all workers.
package main

import (
	"os"
	"time"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/home"
)

// CLI is the grammar; each verb lives in its own file.
type CLI struct {
	cli.Globals

	Ls      LsCmd      `cmd:"" help:"List runs, newest first."`
	Show    ShowCmd    `cmd:"" help:"How a run ended: attestation, evidence, cost, actions, snapshot."`
	Context ContextCmd `cmd:"" help:"Print the exact briefing the box was given."`
	Recall  RecallCmd  `cmd:"" help:"Why each part of the briefing was included."`
	Log     LogCmd     `cmd:"" help:"Print the run's transcript: an agent's as a conversation (--raw: its events as they came)."`
	Changes ChangesCmd `cmd:"" help:"What the run changed in the store (store-changes.txt)."`
	Gateway GatewayCmd `cmd:"" help:"Every request the run's gateway served or refused (gateway.jsonl)."`
	Usage   UsageCmd   `cmd:"" help:"Runs, box time, CPU, model calls, tokens and spend, by day, worker or model."`
	Prune   PruneCmd   `cmd:"" help:"Delete old run folders (never a live one, never one a task refers to)."`
}

func main() {
	os.Exit(cli.Main("roster-runs", &CLI{}, os.Args[1:]))
}

// hostZone is the zone of host-local days and times: org.toml's
// [dispatch] zone, else the system zone; never TZ.
func hostZone(h home.Home) (*time.Location, error) {
	org, err := config.LoadOrg(h)
	if err != nil {
		return nil, err // a broken org.toml is refused as by every command
	}
	return org.Zone(), nil
}
