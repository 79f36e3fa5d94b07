// Command roster-chat bridges chat networks and the data tree
// (docs/channels.md): `serve` runs every configured account's adapter,
// logs each message before the network is acknowledged, files relay
// tasks and delivers the outboxes' replies; `ls`, `log`, `send` and
// `pair` are the operator's view and hands. It is the only process that
// holds chat credentials.
package main

import (
	"os"

	"github.com/roster-sh/roster/lib/cli"
)

// CLI is the grammar; each verb lives in its own file.
type CLI struct {
	cli.Globals

	Serve ServeCmd `cmd:"" help:"Run the chat accounts' adapters (foreground; SIGTERM drains)."`
	Ls    LsCmd    `cmd:"" help:"Conversations: the last message, replies queued or failed, pending pairings."`
	Log   LogCmd   `cmd:"" help:"A conversation's record, message by message."`
	Send  SendCmd  `cmd:"" help:"Send a message to a conversation as the worker (logged by: operator)."`
	Pair  PairCmd  `cmd:"" help:"Strangers who asked to reach a worker: ls, approve CODE, deny CODE."`
}

func main() {
	os.Exit(cli.Main("roster-chat", &CLI{}, os.Args[1:]))
}
