package suite

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// ErrNotFound is returned when no such program exists anywhere.
var ErrNotFound = errors.New("program not found")

// Dirs returns the folders searched before PATH, in order.
func Dirs() []string {
	var dirs []string
	if p := os.Getenv("ROSTER_EXEC_PATH"); p != "" {
		for _, d := range filepath.SplitList(p) {
			if d != "" {
				dirs = append(dirs, d)
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe))
	}
	return dirs
}

// Find returns the path of program name (e.g. "roster-box").
func Find(name string) (string, error) {
	for _, d := range Dirs() {
		p := filepath.Join(d, name)
		if isExecutable(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", ErrNotFound
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Programs lists the names X of every roster-X program found, sorted.
func Programs() []string {
	seen := map[string]bool{}
	dirs := Dirs()
	dirs = append(dirs, filepath.SplitList(os.Getenv("PATH"))...)
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			n := e.Name()
			if strings.HasPrefix(n, "roster-") && len(n) > len("roster-") && isExecutable(filepath.Join(d, n)) {
				seen[strings.TrimPrefix(n, "roster-")] = true
			}
		}
	}
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
