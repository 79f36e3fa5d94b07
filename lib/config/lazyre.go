package config

import (
	"regexp"
	"sync"
)

// lazyRegexp compiles expr on first use. A package-level MustCompile runs
// in every program that links lib/config, before main, whether or not it
// reads a spec (four of them were 0.6 ms and 1,820 allocations of
// roster-task's start-up, GODEBUG=inittrace=1). Measured again
// (2026-12-01, 2 cores, the median of 300 interleaved runs of
// `roster-task --home H ls w`): 4.1 ms, 5.2 ms with this package's and
// lib/home's regexps compiled at start-up.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
