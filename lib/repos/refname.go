package repos

import (
	"errors"
	"strings"
)

var errBadBranch = errors.New("not a branch name")

// validRefPart applies git's check-ref-format rules to a name under
// refs/heads/.
func validRefPart(p string) error {
	switch {
	case p == "" || p == "@":
		return errBadBranch
	case strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Contains(p, "//"):
		return errBadBranch
	case strings.Contains(p, ".."), strings.Contains(p, "@{"), strings.HasSuffix(p, ".lock"), strings.HasSuffix(p, "."), strings.HasPrefix(p, "-"):
		return errBadBranch
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?[\\", c) >= 0 {
			return errBadBranch
		}
	}
	for _, part := range strings.Split(p, "/") {
		if strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return errBadBranch
		}
	}
	return nil
}
