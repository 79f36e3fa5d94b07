package home

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/errs"
)

const (
	runLayout  = "2006-01-02-15-04-05"
	snapLayout = "20060102-150405.000"
	base36     = "0123456789abcdefghijklmnopqrstuvwxyz"
)

var (
	runRE       = lazyRegexp(`^\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}-[0-9a-z]{4}$`)
	filedTaskRE = lazyRegexp(`^t-\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}-[0-9a-z]{4}$`)
	firedTaskRE = lazyRegexp(`^t-\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}-[a-z][a-z0-9_-]{0,62}\.[a-z][a-z0-9_-]{0,62}$`)
	snapRE      = lazyRegexp(`^\d{8}-\d{6}\.\d{3}$`)
)

// randSuffix returns 4 random base-36 characters. math/rand/v2's global
// source (seeded by the runtime) is enough: the suffix only separates ids
// made in the same second, and every id's folder or entry is created
// exclusively, so a clash is refused, never merged. crypto/rand would pull
// the crypto packages into every program's start-up.
func randSuffix() string {
	var b [4]byte
	for i := range b {
		b[i] = base36[rand.IntN(36)]
	}
	return string(b[:])
}

// NewRunID returns a run id for a run starting at t: YYYY-MM-DD-HH-MM-SS-xxxx, UTC.
func NewRunID(t time.Time) string { return t.UTC().Format(runLayout) + "-" + randSuffix() }

// NewTaskID returns the id of a task created at t: "t-" + the run-id form.
func NewTaskID(t time.Time) string { return "t-" + NewRunID(t) }

// FiredTaskID is the id of the task a template fires for one activation, so
// one activation can only ever make one task.
func FiredTaskID(activation time.Time, worker, template string) string {
	return "t-" + activation.UTC().Format(runLayout) + "-" + worker + "." + template
}

// NewSnapshotID returns the id of a snapshot taken at t: YYYYMMDD-HHMMSS.mmm, UTC.
func NewSnapshotID(t time.Time) string { return t.UTC().Format(snapLayout) }

// SnapshotTime parses a snapshot id back to its time.
func SnapshotTime(id string) (time.Time, error) {
	return time.Parse(snapLayout, id)
}

// RunTime parses the time out of a run id.
func RunTime(id string) (time.Time, error) {
	if !runRE.MatchString(id) {
		return time.Time{}, fmt.Errorf("run id %q: not of the form YYYY-MM-DD-HH-MM-SS-xxxx", id)
	}
	return time.Parse(runLayout, id[:len(runLayout)])
}

func IsRunID(s string) bool      { return runRE.MatchString(s) }
func IsTaskID(s string) bool     { return filedTaskRE.MatchString(s) || firedTaskRE.MatchString(s) }
func IsSnapshotID(s string) bool { return snapRE.MatchString(s) }

// Resolve finds the one id among candidates that prefix names (layout.md,
// "Names and ids"). An exact match wins; otherwise the prefix must match
// exactly one, by its start or, for a task or run, by its random
// 4-character suffix (k3v9). Several: exit 2 listing them (errs.Candidates;
// printers show the first MaxCandidates); none: exit 12. For tasks the
// prefix may leave out the "t-". A candidate may carry a "W/" in front
// (the same run id under two workers); its suffix still names it.
func Resolve(what, prefix string, candidates []string) (string, error) {
	if prefix == "" {
		return "", errs.New(errs.ErrUsage, what+": empty id")
	}
	var found []string
	for _, c := range candidates {
		if c == prefix {
			return c, nil
		}
		if strings.HasPrefix(c, prefix) || (what == "task" && strings.HasPrefix(c, "t-"+prefix)) ||
			randomSuffixIs(what, c, prefix) {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		return "", errs.New(errs.ErrNotFound, fmt.Sprintf("%s %q: not found", what, prefix))
	case 1:
		return found[0], nil
	}
	sort.Strings(found)
	found = dedup(found)
	if len(found) == 1 {
		return found[0], nil
	}
	return "", &errs.Candidates{What: what, Prefix: prefix, IDs: found}
}

// randomSuffixIs reports whether s is the random 4-character suffix of
// id, a run id or a filed task's (a fired task's id has none).
func randomSuffixIs(what, id, s string) bool {
	if len(s) != 4 || (what != "task" && what != "run") || !strings.HasSuffix(id, "-"+s) {
		return false
	}
	bare := id[strings.LastIndexByte(id, '/')+1:]
	if what == "task" {
		return filedTaskRE.MatchString(bare)
	}
	return runRE.MatchString(bare)
}

func dedup(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
