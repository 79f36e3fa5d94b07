package repos

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/fsx"
)

// ownFile is data/workers/W/repos/NAME.own: the branches this worker
// created in repo NAME through roster (where force = "own" lets it force
// and delete), one JSON array, written atomically.
func (s *Service) ownFile(r config.Repo) string { return filepath.Join(s.Dir, r.Name+".own") }

// readOwn reads the worker's own branches of r; an unreadable file is
// none (the rules then refuse force and delete: the safe side).
func (s *Service) readOwn(r config.Repo) map[string]bool {
	out := map[string]bool{}
	data, err := os.ReadFile(s.ownFile(r))
	if err != nil {
		return out
	}
	var names []string
	if json.Unmarshal(data, &names) != nil {
		return out
	}
	for _, n := range names {
		out[n] = true
	}
	return out
}

// recordOwn adds the branches cmds created and drops those they deleted
// (called under the repo's lock, after the push landed).
func (s *Service) recordOwn(r config.Repo, cmds []Command) {
	own := s.readOwn(r)
	changed := false
	for _, c := range cmds {
		b := strings.TrimPrefix(c.Ref, "refs/heads/")
		switch {
		case c.Create() && !own[b]:
			own[b], changed = true, true
		case c.Delete() && own[b]:
			delete(own, b)
			changed = true
		}
	}
	if !changed {
		return
	}
	names := make([]string, 0, len(own))
	for n := range own {
		names = append(names, n)
	}
	sort.Strings(names)
	data, _ := json.Marshal(names)
	_ = fsx.WriteFile(s.ownFile(r), append(data, '\n'), 0o600)
}
