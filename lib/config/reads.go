package config

import "sync/atomic"

// Reads is how many times this process has read a worker's own spec
// (ReadWorker, LoadWorker and what is built on them) and org.toml
// (LoadOrg): for tests that pin how often one operation reads its
// configuration. A run reads each once and passes the value down, so it
// sees one consistent configuration even if a file changes mid-start.
type Reads struct {
	Specs int64
	Orgs  int64
}

var specReads, orgReads atomic.Int64

// ReadCounts returns the counts so far; tests compare two of them.
func ReadCounts() Reads {
	return Reads{Specs: specReads.Load(), Orgs: orgReads.Load()}
}
