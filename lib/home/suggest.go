package home

import (
	"os"
	"sort"
	"strings"
)

// Suggest returns the candidate closest to name when it is close enough
// to be a typo (edit distance at most 1, or 2 for names of 5 or more
// characters; or name is a prefix of exactly one), else "". Ties go to
// the first in sorted order.
func Suggest(name string, candidates []string) string {
	sorted := append([]string(nil), candidates...)
	sort.Strings(sorted)
	limit := 1
	if len(name) >= 5 {
		limit = 2
	}
	best, bestD := "", limit+1
	var prefixed []string
	for _, c := range sorted {
		if c == name {
			continue
		}
		if strings.HasPrefix(c, name) {
			prefixed = append(prefixed, c)
		}
		if d := editDistance(name, c); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" && len(prefixed) == 1 {
		return prefixed[0]
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// WorkerHint is the hint for a worker name that does not exist: a "did
// you mean" when one of the home's workers (a spec in workers/ or a folder
// in data/workers/) is a likely typo of it, else how to add it.
func (h Home) WorkerHint(name string) string {
	var names []string
	if ents, err := os.ReadDir(h.WorkersDir()); err == nil {
		for _, e := range ents {
			if n, ok := strings.CutSuffix(e.Name(), ".toml"); ok && ValidWorker(n) == nil {
				names = append(names, n)
			}
		}
	}
	if ents, err := os.ReadDir(h.DataWorkers()); err == nil {
		for _, e := range ents {
			if e.IsDir() && ValidWorker(e.Name()) == nil {
				names = append(names, e.Name())
			}
		}
	}
	if s := Suggest(name, names); s != "" {
		return "did you mean \"" + s + "\"? `roster worker ls` lists the workers"
	}
	return "`roster worker ls` lists the workers; `roster worker add " + name + "` adds one"
}
