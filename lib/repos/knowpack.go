package repos

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/fsx"
)

// packPrefix names the worker's cached knowledge pack in its repos
// folder: a folder .knowledge-<main's commit> holding pack-H.pack and
// pack-H.idx (made by git, host-only).
const packPrefix = ".knowledge-"

// packMaking names a pack being made (.knowledge-new-*); one left by a
// crash is dropped when it is this old.
const (
	packMaking   = packPrefix + "new-"
	packLeftOver = 10 * time.Minute
)

// KnowledgeObjects writes the knowledge repo's main into the folder dst
// (made, readable by the box user) as git objects a clone can borrow:
// dst/main (the commit, one line) and dst/objects/pack/pack-H.{pack,idx}
// holding main and everything it reaches. The box's pid 1 makes
// ~/knowledge from them with one git process (a clone from a bundle took
// three: clone, index-pack, rev-list), its origin the gateway, where
// fetches and pushes go. Nothing is checked out on the host. No
// knowledge repo for this run: nothing is written.
//
// The pack is made by git once per commit of main and kept in the
// worker's repos folder, named by that commit: a run whose main is the
// cached one's gets a copy of it, with no git process. main is read from
// the repo's ref files (git is asked when HEAD is not main or the refs
// are not plain files).
func (s *Service) KnowledgeObjects(ctx context.Context, dst string) error {
	if s.Knowledge == nil {
		return nil
	}
	if err := s.setup(); err != nil {
		return err
	}
	main, err := s.knowledgeHead(ctx)
	if err != nil {
		return fmt.Errorf("the knowledge repo's main: %w", err)
	}
	cache, names, err := s.knowledgePack(ctx, main)
	if err != nil {
		return fmt.Errorf("the knowledge pack: %w", err)
	}
	// Scratch on tmpfs, gone with the run: nothing to make durable. The
	// box reads dst only after this returns.
	pack := filepath.Join(dst, "objects", "pack")
	if err := os.MkdirAll(pack, 0o755); err != nil {
		return err
	}
	for _, d := range []string{dst, filepath.Join(dst, "objects"), pack} {
		if err := os.Chmod(d, 0o755); err != nil {
			return err
		}
	}
	for _, n := range names {
		if err := copyFile(filepath.Join(cache, n), filepath.Join(pack, n), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dst, "main"), []byte(main+"\n"), 0o644)
}

// knowledgeHead is the commit of the knowledge repo's main.
func (s *Service) knowledgeHead(ctx context.Context) (string, error) {
	if main, ok := knowledgeMain(s.Knowledge.Dir); ok {
		return main, nil
	}
	out, err := s.Git.Run(ctx, s.Knowledge.Dir, nil, "rev-parse", "--verify", "--quiet", "refs/heads/main^{commit}")
	main := strings.TrimSpace(string(out))
	if err == nil && !isOID(main) {
		err = fmt.Errorf("git rev-parse said %q", clip(main, 80))
	}
	return main, err
}

// knowledgePack is the cached pack of commit main (its folder and the
// pack's two file names), made by git if the cache holds another
// commit's, or none, or an unreadable one.
func (s *Service) knowledgePack(ctx context.Context, main string) (string, []string, error) {
	cache := filepath.Join(s.Dir, packPrefix+main)
	if names, ok := packFiles(cache); ok {
		return cache, names, nil
	}
	tmp, err := os.MkdirTemp(s.Dir, packMaking)
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(tmp)
	cmd := s.Git.Cmd(ctx, s.Knowledge.Dir, nil, nil, "pack-objects", "--revs", "--delta-base-offset", "--quiet", filepath.Join(tmp, "pack"))
	cmd.Stdin = strings.NewReader(main + "\n")
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		return "", nil, fmt.Errorf("git pack-objects: %v: %s", err, strings.TrimSpace(clip(stderr.String(), 600)))
	}
	names, ok := packFiles(tmp)
	if !ok {
		return "", nil, fmt.Errorf("git pack-objects left no pack and index in %s", tmp)
	}
	// Kept durable: the files flushed, then the folder renamed into place
	// and its parent flushed, so a cache is whole or absent.
	for _, n := range names {
		if err := syncFile(filepath.Join(tmp, n)); err != nil {
			return "", nil, err
		}
	}
	if err := os.Rename(tmp, cache); err != nil {
		// Another run of this worker made it first.
		if names, ok := packFiles(cache); ok {
			return cache, names, nil
		}
		os.RemoveAll(cache) // unreadable: replaced
		if err := os.Rename(tmp, cache); err != nil {
			return "", nil, err
		}
	}
	if err := fsx.SyncDir(s.Dir); err != nil {
		return "", nil, err
	}
	s.dropPacks(filepath.Base(cache))
	return cache, names, nil
}

// dropPacks removes the cached packs of other commits (and bundles, the
// cache of earlier versions), and packs being made that a crash left.
// A failure costs only disk.
func (s *Service) dropPacks(keep string) {
	ents, _ := os.ReadDir(s.Dir)
	for _, e := range ents {
		n := e.Name()
		if n == keep || !strings.HasPrefix(n, packPrefix) {
			continue
		}
		rest := strings.TrimPrefix(n, packPrefix)
		if strings.HasPrefix(n, packMaking) {
			if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < packLeftOver {
				continue
			}
		} else if !isOID(rest) && !(strings.HasSuffix(rest, ".bundle") && isOID(strings.TrimSuffix(rest, ".bundle"))) {
			continue
		}
		os.RemoveAll(filepath.Join(s.Dir, n))
	}
}

// packFiles are the names of the one pack and its index in dir
// (pack-H.pack, pack-H.idx, nothing else), if dir holds just those.
func packFiles(dir string) ([]string, bool) {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 2 {
		return nil, false
	}
	idx, pack := ents[0].Name(), ents[1].Name() // sorted: .idx before .pack
	h, ok := strings.CutSuffix(strings.TrimPrefix(idx, "pack-"), ".idx")
	if !ok || !strings.HasPrefix(idx, "pack-") || !isOID(h) || pack != "pack-"+h+".pack" ||
		!ents[0].Type().IsRegular() || !ents[1].Type().IsRegular() {
		return nil, false
	}
	return []string{pack, idx}, true
}

// knowledgeMain is the commit main points at in the bare repo dir, read
// from its files (a loose ref, else packed-refs), when HEAD is main.
func knowledgeMain(dir string) (string, bool) {
	if b, err := os.ReadFile(filepath.Join(dir, "HEAD")); err != nil || string(b) != "ref: refs/heads/main\n" {
		return "", false
	}
	if b, err := os.ReadFile(filepath.Join(dir, "refs", "heads", "main")); err == nil {
		id := strings.TrimSuffix(string(b), "\n")
		return id, isOID(id)
	}
	b, err := os.ReadFile(filepath.Join(dir, "packed-refs"))
	if err != nil {
		return "", false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if id, ref, ok := strings.Cut(l, " "); ok && ref == "refs/heads/main" {
			return id, isOID(id)
		}
	}
	return "", false
}

// syncFile flushes the file at path to disk.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// copyFile copies src to dst (made new with perm).
func copyFile(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, perm) // past the umask
}
