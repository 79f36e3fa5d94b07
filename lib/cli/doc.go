// Package cli is the one Main every roster program but roster-lock runs:
// kong parsing with usage errors as exit 2, lib/errs' exit codes,
// "error:"/"hint:" lines on stderr, and the table and JSON Lines printers.
// All of them but Main and JSONLine are lib/cli/out's, re-exported here:
// roster-lock reads its own command line and prints through lib/cli/out,
// so that it links neither kong nor encoding/json.
//
// Programs keep their grammar and Run methods in cmd/; Run methods take
// *cli.Env (and the grammar's embedded *cli.Globals) and return an error
// that wraps a lib/errs kind.
package cli
