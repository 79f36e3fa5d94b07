package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/roster-sh/roster/lib/fsx"
	"golang.org/x/sys/unix"
)

// Setup makes a run's agent folder dir (host runs/RUN/agent, new) owned by
// the box user uid and writes the plan's files into it, owned by uid too:
// the agent rewrites some of them (Claude Code its .claude.json) and
// writes its own beside them. It runs before the box starts, so nothing
// in dir is the box's yet.
func Setup(dir string, uid int, p *Plan) error {
	if err := mkdirOwned(dir, uid); err != nil {
		return err
	}
	names := make([]string, 0, len(p.Files))
	for n := range p.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	dirs := []string{p.SessionDir}
	for _, n := range names {
		dirs = append(dirs, filepath.Dir(n))
	}
	for _, d := range dirs {
		if err := mkdirAllOwned(dir, d, uid); err != nil {
			return err
		}
	}
	for _, n := range names {
		path := filepath.Join(dir, n)
		if err := fsx.WriteFile(path, p.Files[n], 0o644); err != nil {
			return fmt.Errorf("agent folder: %w", err)
		}
		if err := os.Lchown(path, uid, uid); err != nil {
			return fmt.Errorf("agent folder: %w", err)
		}
	}
	return fsx.SyncDir(filepath.Dir(dir))
}

func mkdirOwned(path string, uid int) error {
	if err := os.Mkdir(path, 0o755); err != nil {
		return fmt.Errorf("agent folder: %w", err)
	}
	if err := os.Chmod(path, 0o755); err != nil { // umask undone
		return err
	}
	return os.Lchown(path, uid, uid)
}

// mkdirAllOwned makes the folders of rel (a plan's own relative path)
// under dir, each owned by uid.
func mkdirAllOwned(dir, rel string, uid int) error {
	if rel == "." || rel == "" {
		return nil
	}
	p := dir
	for _, part := range strings.Split(filepath.Clean(rel), string(filepath.Separator)) {
		p = filepath.Join(p, part)
		if err := mkdirOwned(p, uid); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}

// SessionFile is the session file the agent named id in a run's agent
// folder dir, relative to dir's parent (the run folder: "agent/..."), or
// "" when there is none. The folder is the box's: only a regular file is
// named, no link is followed, and id is the agent's word, so one that
// could leave the folder names nothing.
func (a *Agent) SessionFile(dir string, p *Plan, id string) string {
	if id == "" || strings.ContainsAny(id, "/\\\x00*?[") || id == "." || id == ".." {
		return ""
	}
	var pattern string
	switch a.Name {
	case "pi": // sessions/TIME_ID.jsonl
		pattern = filepath.Join(dir, p.SessionDir, "*_"+id+".jsonl")
	case "claude": // claude/projects/CWD/ID.jsonl
		pattern = filepath.Join(dir, p.SessionDir, "*", id+".jsonl")
	default:
		return ""
	}
	matches, _ := filepath.Glob(pattern)
	sort.Strings(matches)
	for _, m := range matches {
		rel, err := filepath.Rel(dir, m)
		if err != nil || !isRegularBeneath(dir, rel) {
			continue
		}
		return filepath.Join(filepath.Base(dir), rel)
	}
	return ""
}

// isRegularBeneath says whether rel under dir is a regular file reached
// through real folders only.
func isRegularBeneath(dir, rel string) bool {
	p := dir
	parts := strings.Split(rel, string(filepath.Separator))
	for i, part := range parts {
		p = filepath.Join(p, part)
		st, err := os.Lstat(p)
		if err != nil {
			return false
		}
		last := i == len(parts)-1
		if last && !st.Mode().IsRegular() || !last && !st.IsDir() {
			return false
		}
	}
	return true
}

// MaxAgentDir bounds what a run's agent folder may keep after the run.
const MaxAgentDir = 256 << 20

// Bound measures the agent folder dir after its run (no link followed,
// every entry's own size) and, when it holds more than max bytes, empties
// it: the folder is the box's writing, and a run must not fill the runs
// history. It returns the size found and whether it was emptied.
func Bound(dir string, max int64) (int64, bool, error) {
	var size int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if unix.Lstat(path, &st) == nil {
			size += st.Blocks * 512 // sparse files count what they use
		} else {
			size += info.Size()
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return size, false, err
	}
	if size <= max {
		return size, false, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return size, false, err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return size, false, err
		}
	}
	return size, true, fsx.SyncDir(dir)
}
