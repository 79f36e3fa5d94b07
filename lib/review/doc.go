// Package review carries out an operator's decision on a task's gate
// (docs/tasks.md, "Gates"; docs/repos.md, "Host repos"): for a held push
// (a repo_push gate) approve lands the pending ref, fast-forward only,
// and deny drops it; then the decision is recorded in the worker's
// partition. roster-task gate and roster-web both decide through it, so a
// gate is resolved the same way wherever the operator sits.
//
// Nothing here holds a lock across the git work: the host repo's own
// lock guards the ref, and the partition's lock is taken by
// tms.ResolveGateBy for the record alone.
package review
