package main

import (
	"os"
	"strings"
)

// `roster-task set WORKER --version N` (docs/tools.md) names its flag like the
// global --version (print the program's version), which kong cannot hold
// twice. So, before parsing, a --version after the `set` verb is renamed
// to the hidden --set-version that SetCmd declares; --version anywhere
// else keeps its global meaning.
func init() { os.Args = renameSetVersion(os.Args) }

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
