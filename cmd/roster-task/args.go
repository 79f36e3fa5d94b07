package main

import (
	"regexp"
	"strings"
)

// fixArgs rewrites the arguments (without the program name) where kong
// would read them otherwise than docs/tools.md writes them, before parsing:
//
//   - kong reads "-1" after a flag as a short flag, never as the flag's
//     value, and answers `--since -1` with a puzzling "(short flag);
//     perhaps try --since="-1"?". So a negative number that follows one of
//     roster-task's numeric flags is joined to it (`--since=-1`), and the
//     command then says plainly what the flag takes (`--since -1: must be
//     0 or more`; a negative --priority is a valid value).
//   - `roster-task set WORKER --version N` names its flag like the global
//     --version (print the program's version), which kong cannot hold
//     twice. So a --version after the `set` verb is renamed to the hidden
//     --set-version that SetCmd declares; --version anywhere else keeps
//     its global meaning.
//
// Negative numbers are joined first, so `set W --version -1` is renamed
// as `--version=-1`.
func fixArgs(args []string) []string {
	argv := append([]string{""}, args...) // both look at the arguments after argv[0]
	return renameSetVersion(joinNegativeValues(argv))[1:]
}

// numericFlags are the flags whose value may be written as a negative
// number, under the long name kong knows them by.
var numericFlags = map[string]string{
	"--since":       "--since",
	"--priority":    "--priority",
	"--uid":         "--uid",
	"--concurrency": "--concurrency",
	"--count":       "--count",
	"-n":            "--count",
	"--version":     "--version", // set's (renameSetVersion renames it next)
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

func renameSetVersion(args []string) []string {
	verb := -1
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--home" {
			i++
			continue
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		verb = i
		break
	}
	if verb < 0 || args[verb] != "set" {
		return args
	}
	out := append([]string(nil), args...)
	for i := verb + 1; i < len(out); i++ {
		switch {
		case out[i] == "--":
			return out
		case out[i] == "--version":
			out[i] = "--set-version"
		case strings.HasPrefix(out[i], "--version="):
			out[i] = "--set-version=" + strings.TrimPrefix(out[i], "--version=")
		}
	}
	return out
}
