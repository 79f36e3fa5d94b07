package doctor

import (
	"fmt"
	"os"
	"strings"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// spec is a worker whose spec was read; Worker is nil when it was refused.
type spec struct {
	Name   string
	Worker *config.Worker
}

// checkConfig reads org.toml and every worker spec, listing every problem
// at once (the commands stop at the first); org is nil when org.toml is
// refused.
func checkConfig(r *Report, o Options) (*config.Org, []spec) {
	h := o.Home
	org, err := config.LoadOrg(h)
	if err != nil {
		r.add("config", Problem, h.OrgFile(), err.Error(), orFix(errs.HintOf(err), "fix the line it names; every command refuses org.toml until then"))
		org = nil
	} else {
		for _, w := range org.Warnings {
			r.add("config", Warning, h.OrgFile(), w, "")
		}
	}
	strays(r, h)
	names, err := config.ListWorkers(h)
	if err != nil {
		r.add("config", Problem, h.WorkersDir(), err.Error(), "")
	}
	ws, werrs := config.LoadWorkers(h, names)
	specs := make([]spec, len(names))
	bad := 0
	for i, n := range names {
		specs[i] = spec{Name: n, Worker: ws[i]}
		if werrs[i] != nil {
			bad++
			r.add("config", Problem, n, werrs[i].Error(), orFix(errs.HintOf(werrs[i]), "fix "+h.SpecFile(n)+" (roster worker edit "+n+"); its tasks wait until then"))
			continue
		}
		for _, w := range ws[i].Warnings {
			r.add("config", Warning, n, w, "")
		}
	}
	if org != nil && bad == 0 {
		r.add("config", OK, "", fmt.Sprintf("org.toml and %d worker specs read", len(names)), "")
	}
	return org, specs
}

// strays names files in workers/ that are not a worker's spec: a typo in a
// name (Bad.toml, dobby.tml) leaves a worker nobody runs.
func strays(r *Report, h home.Home) {
	ents, err := os.ReadDir(h.WorkersDir())
	if err != nil {
		return
	}
	for _, e := range ents {
		n, ok := strings.CutSuffix(e.Name(), ".toml")
		switch {
		case strings.HasPrefix(e.Name(), "."):
		case !ok:
			r.add("config", Warning, e.Name(), "a file in workers/ that is not NAME.toml is not a worker", "rename it NAME.toml, or move it out of "+h.WorkersDir())
		case e.IsDir():
		case home.ValidWorker(n) != nil:
			r.add("config", Warning, e.Name(), fmt.Sprintf("%q is not a valid worker name: no command sees this spec", n),
				"rename it: a lower-case letter, then up to 62 of a-z 0-9 _ -")
		}
	}
}

func orFix(hint, fallback string) string {
	if hint != "" {
		return hint
	}
	return fallback
}
