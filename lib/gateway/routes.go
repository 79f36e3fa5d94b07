package gateway

import (
	"strings"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/creds"
)

// routePaths is the requests a model route forwards: "METHOD /path"
// exactly, or under a "METHOD /prefix/*".
type routePaths struct {
	exact    map[string]bool
	prefixes []string // "METHOD /prefix/"
}

func newRoutePaths(p creds.Provider) routePaths {
	list := p.Paths
	if list == nil {
		list = config.RoutePaths(p.Style)
	}
	rp := routePaths{exact: map[string]bool{}}
	for _, s := range list {
		if pre, ok := strings.CutSuffix(s, "/*"); ok {
			rp.prefixes = append(rp.prefixes, pre+"/")
		} else {
			rp.exact[s] = true
		}
	}
	return rp
}

// allows tells whether the route forwards method to path (escaped, the
// part after /PROVIDER; a percent-encoded spelling matches nothing).
func (rp *routePaths) allows(method, path string) bool {
	key := method + " " + path
	if rp.exact[key] {
		return true
	}
	for _, pre := range rp.prefixes {
		if strings.HasPrefix(key, pre) && len(key) > len(pre) {
			return true
		}
	}
	return false
}
