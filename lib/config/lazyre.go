package config

import (
	"regexp"
	"sync"
)

// lazyRegexp compiles expr on first use. A package-level MustCompile runs
// in every program that links lib/config, before main, whether or not it
// reads a spec (four of them were 0.6 ms and 1,820 allocations of
// roster-task's start-up, GODEBUG=inittrace=1).
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
