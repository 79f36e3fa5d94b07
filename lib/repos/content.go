package repos

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/roster-sh/roster/lib/config"
)

// ciFiles are the CI configurations a grant must allow (ci = true) before
// a push may change them: a change there runs code with the forge's
// secrets.
var ciFiles = []string{".github/workflows/", ".github/actions/", ".gitlab-ci.yml", ".gitlab/ci/", ".circleci/",
	"Jenkinsfile", ".travis.yml", "azure-pipelines.yml", ".azure-pipelines/", ".buildkite/", ".drone.yml",
	"bitbucket-pipelines.yml", ".woodpecker.yml", ".woodpecker/", ".forgejo/workflows/", ".gitea/workflows/"}

func isCIFile(p string) bool {
	for _, c := range ciFiles {
		if strings.HasSuffix(c, "/") && strings.HasPrefix(p, c) || p == c {
			return true
		}
	}
	return false
}

// minSecret is the shortest credential the scan looks for: a shorter
// value would match ordinary text.
const minSecret = 8

// checkContent applies the content rules to what cmds add (the objects
// reachable from their new ids and from no ref the repo had): submodules,
// escaping symlinks, CI files, blob and path counts, and the exact-match
// secret scan. It returns the refusal's kind and what to tell the client
// (the path, and for a secret which source matched, never the value).
func (s *Service) checkContent(ctx context.Context, r config.Repo, dir string, qenv []string, cmds []Command) (kind, msg string) {
	var tips []string
	for _, c := range cmds {
		if !c.Delete() {
			tips = append(tips, c.New)
		}
	}
	if len(tips) == 0 {
		return "", ""
	}
	commits, err := s.Git.Run(ctx, dir, qenv, append(append([]string{"rev-list"}, tips...), "--not", "--all")...)
	if err != nil {
		return "bad_pack", "cannot list the pushed commits: " + err.Error()
	}
	if kind, msg := s.checkTrees(ctx, r, dir, qenv, commits); kind != "" {
		return kind, msg
	}
	return s.checkBlobs(ctx, r, dir, qenv, tips)
}

// checkTrees reads each new commit's changes against its parents (git
// diff-tree -m --raw) for modes and paths.
func (s *Service) checkTrees(ctx context.Context, r config.Repo, dir string, qenv []string, commits []byte) (string, string) {
	cmd := s.Git.Cmd(ctx, dir, nil, qenv, "diff-tree", "--stdin", "-r", "-z", "--raw", "--no-renames", "--root", "-m")
	cmd.Stdin = bytes.NewReader(commits)
	out, err := cmd.Output()
	if err != nil {
		return "bad_pack", "cannot read the pushed trees: " + err.Error()
	}
	toks := bytes.Split(out, []byte{0})
	for i := 0; i < len(toks); i++ {
		t := string(toks[i])
		if !strings.HasPrefix(t, ":") {
			continue // a commit's header line
		}
		f := strings.Fields(t[1:]) // old mode, new mode, old id, new id, status
		if len(f) < 5 || i+1 >= len(toks) {
			return "bad_pack", "unreadable tree changes"
		}
		i++
		p := string(toks[i])
		newMode, newID, status := f[1], f[3], f[4]
		switch {
		case path.Base(p) == ".gitmodules":
			return RefuseGitModules, p + ": changing .gitmodules is refused (no submodules through roster)"
		case newMode == "160000":
			return RefuseGitlink, p + ": a submodule entry (gitlink) is refused"
		case !r.CI && isCIFile(p):
			return RefuseCIFile, p + ": a change to CI configuration needs ci = true in the worker's [[repo]] grant"
		case newMode == "120000" && status != "D":
			target, err := s.Git.Run(ctx, dir, qenv, "cat-file", "blob", newID)
			if err != nil {
				return "bad_pack", p + ": unreadable symlink"
			}
			if escapes(p, string(target)) {
				return RefuseSymlink, fmt.Sprintf("%s: a symlink to %q leaves the tree", p, clip(string(target), 200))
			}
		}
	}
	return "", ""
}

// escapes tells a symlink at p whose target is absolute or climbs out of
// the tree.
func escapes(p, target string) bool {
	if target == "" || strings.HasPrefix(target, "/") || strings.IndexByte(target, 0) >= 0 {
		return true
	}
	j := path.Join(path.Dir(p), target)
	return j == ".." || strings.HasPrefix(j, "../")
}

// checkBlobs reads every new blob (git rev-list --objects, then cat-file
// --batch) for size, the count of paths, and the secrets.
func (s *Service) checkBlobs(ctx context.Context, r config.Repo, dir string, qenv []string, tips []string) (string, string) {
	objs, err := s.Git.Run(ctx, dir, qenv, append(append([]string{"rev-list", "--objects"}, tips...), "--not", "--all")...)
	if err != nil {
		return "bad_pack", "cannot list the pushed objects: " + err.Error()
	}
	paths := map[string]string{}
	var ids []string
	for _, l := range strings.Split(string(objs), "\n") {
		id, p, ok := strings.Cut(l, " ")
		if !ok || p == "" {
			continue // a commit, or the root tree
		}
		if _, seen := paths[id]; !seen {
			ids = append(ids, id)
		}
		paths[id] = p
	}
	var secrets []Secret
	if s.Secrets != nil {
		for _, sec := range s.Secrets() {
			if len(sec.Value) >= minSecret {
				secrets = append(secrets, sec)
			}
		}
	}
	cmd := s.Git.Cmd(ctx, dir, nil, qenv, "cat-file", "--batch")
	cmd.Stdin = strings.NewReader(strings.Join(ids, "\n") + "\n")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "bad_pack", err.Error()
	}
	if err := cmd.Start(); err != nil {
		return "bad_pack", err.Error()
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	br := bufio.NewReaderSize(out, 64<<10)
	files := 0
	for range ids {
		head, err := br.ReadString('\n')
		if err != nil {
			return "bad_pack", "cannot read the pushed objects"
		}
		f := strings.Fields(head)
		if len(f) != 3 {
			return "bad_pack", "cannot read the pushed objects: " + clip(head, 100)
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || size < 0 {
			return "bad_pack", "cannot read the pushed objects: " + clip(head, 100)
		}
		if f[1] == "blob" {
			files++
			switch p := paths[f[0]]; {
			case files > r.MaxFiles:
				return RefuseTooManyFiles, fmt.Sprintf("the push adds more than %d files (max_files)", r.MaxFiles)
			case size > r.MaxBlob: // refused before it is read: memory stays bounded by max_blob
				return RefuseBlobTooLarge, fmt.Sprintf("%s: %d bytes, over max_blob (%s)", p, size, config.FormatSize(r.MaxBlob))
			}
		}
		body := make([]byte, size+1)
		if _, err := io.ReadFull(br, body); err != nil {
			return "bad_pack", "cannot read the pushed objects"
		}
		if f[1] != "blob" {
			continue
		}
		p := paths[f[0]]
		for _, sec := range secrets {
			if bytes.Contains(body[:size], []byte(sec.Value)) {
				return RefuseSecret, fmt.Sprintf("%s holds a credential (the one %s gives): remove it from every pushed commit", p, sec.Source)
			}
		}
	}
	return "", ""
}
