// Package tms is the task management system: one partition of tasks and
// templates per worker (tasks/tasks.json, tasks/journal.jsonl and
// view/schedule.json), with every rule of docs/tasks.md.
//
// # Invariants
//
// Every change happens under flock on tasks/.lock and is written in
// docs/layout.md's order: (1) its journal line(s), each carrying the version it
// produces, appended and fsynced; (2) tasks.json atomically replaced; (3)
// view/schedule.json atomically replaced. The next holder of the lock rolls
// tasks.json forward from the journal's records when the journal is ahead,
// so a crash between (1) and (2) loses and duplicates nothing. seq grows by
// 1 per line, version by 1 per change; one change is one line with a
// `records` array holding every entry it touched ({"removed": true} for an
// entry leaving tasks.json), so Rebuild can rebuild tasks.json from the
// journal alone. Adding a task reads tasks.json and the journal's tail only.
// A corrupt or unknown-format tasks.json or journal is refused (errs.ErrRefused,
// exit 14, with a hint: fsck; --rebuild for tasks.json; a person for the
// journal) and never written. Only a torn last line is ignored (and
// truncated by the next writer). Trade-off: a change reads the journal
// backwards only to its last versioned line, so a corrupt line deeper in
// the journal is refused by every whole-journal reader (Journal, Finished,
// Follow, Fsck, Rebuild, roll-forward) but not by Add or Due.
//
// tasks.json is read by a hand-written decoder for the writer's own form
// (codec.go) that hands anything else to encoding/json, so what is read
// and what is refused do not depend on the path taken (FuzzFastDecode);
// the entries are encoded once for tasks.json and schedule.json. Add
// keeps the tasks it does not touch as their bytes and checks only the new
// task's dependencies; it checks every task as fully as a decode does
// unless the file carries its writer's seal (sealed.go: an extended
// attribute with the file's size and CRC-32, set before the rename),
// which proves the bytes are the writer's own, checked, form.
//
// Finding a finished task (a dependency, Show, requeue, a too-late
// change) reads the history index, tasks/index.jsonl (history.go), with no
// lock held: a change that needs it loads it first (withHistory), then,
// under the lock, folds in only the journal lines appended meanwhile.
//
// Eligibility (due, scheduled, waiting, blocked, late, held) is derived,
// never stored. A finished dependency's outcome is copied into its
// dependents' `settled` map when it finishes, so eligibility never reads the
// journal.
//
// # What a change costs
//
// An add at 10,000 pending tasks (tasks.json 2.3 MB; issue 14 item 5,
// bench/tasks.sh) is mostly the files' own I/O, which the format asks
// for at every change: tasks.json read whole and its seal checked (one
// CRC-32 pass, reused for the new seal), the new tasks.json and
// schedule.json written whole to temporary files (the first fsynced while
// the second is written), the journal line appended, three fsyncs at
// once, two renames, two folder fsyncs beside the freeing of the two old
// files. Traced medians of 80 runs at load 12 (2026-12-01): read and check
// 2.5-3.5 ms (beside the journal's tail), writes 1.9, fsyncs 3.9,
// renames 0.1, folders and frees 2.9; the program's start before main
// about 4 (roster-task --version 3.6-5.4 ms wall at load 7), its grammar
// and config 1.1, the task and its line 0.5. bench/tasks.sh prints the
// I/O alone as its floors. Since then roster-task links no HTTP or TLS
// code (the hold's credential lookup is lib/creds) and the seal's CRC-32
// needs no table built at start: --version 3.87 -> 3.34 ms of CPU, an add
// at 9,500 pending 12.79 -> 12.47 (perf stat, 200 interleaved pairs at
// load 3); bench/tasks.sh's header has the rest, and where an add's CPU
// goes.
//
// # Use
//
// Open a partition with Open(home, worker, Options{Clock, Org, Worker});
// a Partition holds no state between calls, so any number of processes may
// use the same partition at once. Time comes from Options.Clock. Its
// callers are people (roster-task), the dispatcher on each tick and the box
// supervisor of each run; a file holds one job: filing (add.go), claims and
// the host's attestation of a run (claim.go), canceling and requeueing
// (cancel.go), gates (gates.go), the worker's set_tasks (set.go,
// set_templates.go), templates and time (templates.go, due.go), outbox
// actions (actions.go), reading and checking (read.go, journal.go,
// fsck.go, history.go); partition.go is the lock and the change, files.go reads and
// writes the files, codec.go and codec_encode.go are tasks.json's fast
// path, sealed.go its seal.
package tms
