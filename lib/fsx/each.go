package fsx

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Each runs fn(i) for every i in [0, n) on a few goroutines (twice the
// processors, at most n) and returns when all have returned. It is for
// reading many small files (a spec and a partition per worker, at 10,000
// workers): each read is mostly a wait in a system call, so a few at once
// use the cores the one-at-a-time loop leaves idle. fn must write only
// its own index's results.
func Each(n int, fn func(i int)) {
	par := min(2*runtime.GOMAXPROCS(0), n)
	if par <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}
