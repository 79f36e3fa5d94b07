package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/roster-sh/roster/lib/errs"
)

// ErrNotInstalled is an agent whose executable the box would not see.
var ErrNotInstalled = errs.New(errs.ErrNotFound, "agent not installed")

// boxPathDirs are the box's PATH folders an agent can come from: the
// host's /usr (or the rootfs's), never roster's own /opt/roster/bin.
var boxPathDirs = []string{"/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin"}

// Find returns the host path of a's executable as the box will see it:
// the first of the box's PATH folders holding it, in the host's /usr when
// rootfs is "" (the box sees nothing else of the host's root), else in
// rootfs. Symlinks are followed inside that root only, and what they reach
// must be a regular, executable file still inside it. An executable it
// runs through (pi's node) must be there too. Missing: ErrNotInstalled
// with a's install hint.
func Find(a *Agent, rootfs string) (string, error) {
	exe, err := findIn(a.Executable, rootfs)
	if err != nil {
		return "", errs.WithHint(fmt.Errorf("%s: %w", a.Name, err), a.InstallHint)
	}
	for _, n := range a.Needs {
		if _, err := findIn(n, rootfs); err != nil {
			return "", errs.WithHint(fmt.Errorf("%s needs %s: %w", a.Name, n, err), a.InstallHint)
		}
	}
	return exe, nil
}

func findIn(name, rootfs string) (string, error) {
	for _, dir := range boxPathDirs {
		if rootfs == "" && !strings.HasPrefix(dir, "/usr/") {
			continue // the generated root has only /usr of the host
		}
		p, err := resolveIn(rootfs, path.Join(dir, name))
		if err != nil {
			continue
		}
		host := filepath.Join(rootfs, p)
		if rootfs == "" && !strings.HasPrefix(p, "/usr/") {
			continue // a link out of /usr: the box cannot follow it
		}
		st, err := os.Stat(host)
		if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
			continue
		}
		return host, nil
	}
	where := "the host's /usr"
	if rootfs != "" {
		where = rootfs
	}
	return "", fmt.Errorf("%w: no executable %s on the box's PATH in %s", ErrNotInstalled, name, where)
}

// resolveIn resolves p's symlinks as if root were "/" (root "" is the
// host's own root) and returns the resolved path relative to root. A link
// never leaves root: ".." stops at it and an absolute target starts at it.
func resolveIn(root, p string) (string, error) {
	const maxLinks = 40
	links := 0
	done := "/"
	rest := strings.Split(strings.TrimPrefix(path.Clean(p), "/"), "/")
	for len(rest) > 0 {
		part := rest[0]
		rest = rest[1:]
		if part == "" || part == "." {
			continue
		}
		if part == ".." {
			done = path.Dir(done)
			continue
		}
		next := path.Join(done, part)
		st, err := os.Lstat(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		if st.Mode()&os.ModeSymlink == 0 {
			done = next
			continue
		}
		if links++; links > maxLinks {
			return "", errors.New("too many links")
		}
		target, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		if path.IsAbs(target) {
			done = "/"
		}
		rest = append(strings.Split(strings.TrimPrefix(target, "/"), "/"), rest...)
	}
	return done, nil
}

// maxPackageJSON bounds the package.json read for a version.
const maxPackageJSON = 1 << 20

// Version is the version of the agent whose executable is exe (a path Find
// returned): the "version" of the nearest package.json above it that names
// a's npm package, the way npm installs it. "" when there is none (an
// agent installed some other way): the version is evidence, not a
// requirement.
func Version(a *Agent, exe string) string {
	dir := filepath.Dir(exe)
	for i := 0; i < 6 && dir != "/" && dir != "."; i++ {
		if v, ok := packageVersion(filepath.Join(dir, "package.json"), a.Package); ok {
			return v
		}
		dir = filepath.Dir(dir)
	}
	return ""
}

func packageVersion(file, name string) (string, bool) {
	f, err := os.Open(file)
	if err != nil {
		return "", false
	}
	defer f.Close()
	var pkg struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if json.NewDecoder(io.LimitReader(f, maxPackageJSON)).Decode(&pkg) != nil || pkg.Name != name {
		return "", false
	}
	v := pkg.Version
	if len(v) > 64 || strings.ContainsAny(v, "\x00\n") {
		return "", false
	}
	return v, true
}
