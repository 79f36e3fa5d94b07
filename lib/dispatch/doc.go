// Package dispatch is roster's dispatch loop (docs/dispatch-and-box.md,
// "roster-dispatch"): one per home, it fires templates, claims due tasks in
// claim order round-robin across workers up to the global cap and each
// worker's concurrency, and starts a detached `roster-box run` per claim.
//
// What a reader must know:
//   - One dispatcher per home: Lock flocks data/dispatch.lock (never
//     replaced; the holder's pid is written into it in place).
//   - All state is on disk. Live boxes are counted from claimed tasks, so
//     a restarted dispatcher adopts the boxes of its predecessor; it never
//     holds a box's state in memory. Boxes run in their own session and
//     outlive the dispatcher.
//   - A claimed task whose supervisor is dead (tms.BoxGone: box.json names
//     a process that is gone, or run.json records the run's end, or no
//     box.json 30 s after the claim) is reaped with `roster-box reap RUN`
//     and reclaimed in the same pass (tms.Reclaim, 3-attempt bound).
//     The dispatcher never links libcontainer.
//   - Wake-ups: fsnotify on every worker's tasks/ folder and on workers/
//     (folders, because a watch on a file dies at the first rename over
//     it), timers for the next activation or scheduled_at, and poll as
//     the longest sleep.
//   - The daily sweep (`roster-snap sweep W...`) goes in batches of
//     SweepBatch; each is given only its workers without a live box when
//     it starts, and no claim is made for them until it ends: a sweep
//     never races a run's own post-run snapshot, and a claim waits at
//     most for one batch.
//   - Time rules (templates, the daily jobs' host-local day) read the
//     injected Clock; sleeping uses real timers.
package dispatch
