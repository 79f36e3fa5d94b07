package main

import (
	"errors"

	"github.com/roster-sh/roster/lib/cli"
)

// InboxCLI is the grammar inside a box: actions written to the outbox.
type InboxCLI struct {
	cli.Globals
}

func errNotYet(what string) error { return errors.New(what + ": not implemented yet") }
