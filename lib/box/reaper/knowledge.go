package reaper

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// KnowledgeTimeout bounds the knowledge clone: a box whose gateway does
// not answer starts without it rather than not at all.
const KnowledgeTimeout = 2 * time.Minute

// Knowledge makes the run's knowledge repo a clone at dir, with the
// box's own git, as the box user, on branch, the run's own (empty: stay
// on main, a read-only clone). Its origin is url (the gateway's
// /git/knowledge), which fetches and pushes go to. With objects (the
// host's copy of main as git objects, written for this run: see
// fromObjects) it is made from those with one git process; without them,
// or if that fails, it clones url. The host never checks out a tree
// (docs/repos.md). An error says why; the box goes on without
// ~/knowledge.
func Knowledge(url, dir, branch, objects string, env []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), KnowledgeTimeout)
	defer cancel()
	git := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			msg := strings.TrimSpace(out.String())
			if len(msg) > 400 {
				msg = msg[:400] + "..."
			}
			if ctx.Err() != nil {
				msg = "no answer in " + KnowledgeTimeout.String()
			}
			return errors.New("git " + args[0] + ": " + err.Error() + ": " + msg)
		}
		return nil
	}
	if objects != "" {
		if fromObjects(objects, url, dir, branch, git) == nil {
			return nil
		}
		os.RemoveAll(dir) // the gateway's clone below starts afresh
	}
	if err := git("clone", "--quiet", "--", url, dir); err != nil {
		return err
	}
	if branch == "" {
		return nil
	}
	if startBranch(dir, branch) == nil {
		return nil
	}
	return git("-C", dir, "checkout", "--quiet", "-b", branch)
}

// fromObjects makes at dir the clone `git clone url` would, then `git
// checkout -b branch` (none: on main), from the folder objects: the
// commit of main in objects/main and main's objects in objects/objects,
// which the clone borrows (objects/info/alternates, as `git clone
// --shared` does; they stay for the box's life and are read-only in
// it). pid 1 writes the repo's few files itself and git checks out the
// tree: one git process, where a clone from a bundle ran three (clone,
// index-pack, rev-list). Anything unexpected is an error; the caller
// then clones url.
func fromObjects(objects, url, dir, branch string, git func(...string) error) error {
	b, err := os.ReadFile(filepath.Join(objects, "main"))
	if err != nil {
		return err
	}
	main := strings.TrimSuffix(string(b), "\n")
	if !objectID(main) {
		return errors.New("no commit in " + objects + "/main")
	}
	if branch != "" && !plainBranch(branch) || strings.ContainsAny(url, "\n\"\\") {
		return errors.New("the branch or the URL is not as expected")
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err // dir is new: nothing else may be there
	}
	gitDir := filepath.Join(dir, ".git")
	for _, d := range []string{"objects/info", "objects/pack", "refs/tags", "refs/remotes/origin"} {
		if err := os.MkdirAll(filepath.Join(gitDir, d), 0o755); err != nil {
			return err
		}
	}
	head := "main"
	if branch != "" {
		head = branch
	}
	files := [][2]string{
		{"config", cloneConfig(url, len(main))},
		{"objects/info/alternates", filepath.Join(objects, "objects") + "\n"},
		{"refs/heads/main", main + "\n"},
		{"refs/heads/" + head, main + "\n"},
		{"refs/remotes/origin/main", main + "\n"},
		{"refs/remotes/origin/HEAD", "ref: refs/remotes/origin/main\n"},
		{"HEAD", "ref: refs/heads/" + head + "\n"},
	}
	for _, f := range files {
		p := filepath.Join(gitDir, filepath.FromSlash(f[0]))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(f[1]), 0o644); err != nil {
			return err
		}
	}
	return git("-C", dir, "read-tree", "--reset", "-u", "HEAD")
}

// cloneConfig is the .git/config `git clone url` writes: origin is url,
// main tracks it. idLen is the length of an object name (64: SHA-256).
func cloneConfig(url string, idLen int) string {
	core := "[core]\n\trepositoryformatversion = 0\n"
	if idLen == 64 {
		core = "[core]\n\trepositoryformatversion = 1\n"
	}
	core += "\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n"
	if idLen == 64 {
		core += "[extensions]\n\tobjectformat = sha256\n"
	}
	return core + "[remote \"origin\"]\n\turl = \"" + url + "\"\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n" +
		"[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n"
}

// plainBranch tells a branch name fromObjects and startBranch may write
// as a file under refs/heads: slash-separated parts of letters, digits,
// '-', '_' and '.' that git check-ref-format also takes (no part empty,
// starting or ending with '.', holding "..", or ending ".lock"), such as
// run/RUN.
func plainBranch(b string) bool {
	for _, part := range strings.Split(b, "/") {
		if part == "" || part[0] == '.' || part[len(part)-1] == '.' ||
			strings.Contains(part, "..") || strings.HasSuffix(part, ".lock") {
			return false
		}
		for _, c := range []byte(part) {
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
				return false
			}
		}
	}
	return b != "main" && b != "HEAD"
}

// startBranch makes branch at the commit main is on in the fresh clone
// dir and puts HEAD on it, as `git checkout -b branch` does from main
// (the index and tree already are that commit's), with no git process:
// one exec less on every start. It writes only a loose ref and HEAD, each
// by rename; anything not as a fresh clone leaves it is an error, and the
// caller asks git instead.
func startBranch(dir, branch string) error {
	gitDir := filepath.Join(dir, ".git")
	if b, err := os.ReadFile(filepath.Join(gitDir, "HEAD")); err != nil || string(b) != "ref: refs/heads/main\n" {
		return errors.New("HEAD is not main")
	}
	b, err := os.ReadFile(filepath.Join(gitDir, "refs", "heads", "main"))
	if err != nil {
		return err
	}
	id := strings.TrimSuffix(string(b), "\n")
	if !objectID(id) || !plainBranch(branch) {
		return errors.New("main or the branch is not as expected")
	}
	ref := filepath.Join(gitDir, "refs", "heads", filepath.FromSlash(branch))
	if _, err := os.Lstat(ref); err == nil {
		return errors.New("the branch exists")
	}
	if err := os.MkdirAll(filepath.Dir(ref), 0o755); err != nil {
		return err
	}
	if err := writeRenamed(ref, id+"\n"); err != nil {
		return err
	}
	return writeRenamed(filepath.Join(gitDir, "HEAD"), "ref: refs/heads/"+branch+"\n")
}

// writeRenamed writes s to path through a file beside it, renamed over.
func writeRenamed(path, s string) error {
	tmp := path + ".roster"
	if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// objectID tells a full hex object name.
func objectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
