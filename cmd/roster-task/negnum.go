package main

import (
	"os"
	"regexp"
)

// kong reads "-1" after a flag as a short flag, never as the flag's value,
// and answers `--since -1` with a puzzling "(short flag); perhaps try
// --since="-1"?". So, before parsing, a negative number that follows one
// of roster-task's numeric flags is joined to it (`--since=-1`), and the
// command then says plainly what the flag takes (`--since -1: must be 0 or
// more`; a negative --priority is a valid value).
func init() { os.Args = joinNegativeValues(os.Args) }

// numericFlags are the flags whose value may be written as a negative
// number, under the long name kong knows them by.
var numericFlags = map[string]string{
	"--since":       "--since",
	"--priority":    "--priority",
	"--uid":         "--uid",
	"--concurrency": "--concurrency",
	"--count":       "--count",
	"-n":            "--count",
	"--version":     "--version", // set's (task_set.go renames it next)
	"--set-version": "--set-version",
}

var negativeNumber = regexp.MustCompile(`^-[0-9]+$`)

func joinNegativeValues(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if out == nil {
				return args
			}
			return append(out, args[i:]...)
		}
		if long, ok := numericFlags[a]; ok && i > 0 && i+1 < len(args) && negativeNumber.MatchString(args[i+1]) {
			if out == nil {
				out = append([]string(nil), args[:i]...)
			}
			out = append(out, long+"="+args[i+1])
			i++
			continue
		}
		if out != nil {
			out = append(out, a)
		}
	}
	if out == nil {
		return args
	}
	return out
}
