package repos

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/roster-sh/roster/lib/fsx"
)

// bundlePrefix names the worker's cached knowledge bundle in its repos
// folder: .knowledge-<main's commit>.bundle.
const bundlePrefix = ".knowledge-"

// BundleKnowledge writes the knowledge repo's main (and HEAD) as a git
// bundle at path, readable by the box user: the box's pid 1 clones from
// it instead of through the gateway (the same objects and refs, three
// HTTP exchanges and three host git processes fewer on every start), then
// points origin at the gateway. Nothing is checked out on the host. No
// knowledge repo for this run: nothing is written.
//
// The bundle is made by git once per commit of main and kept in the
// worker's repos folder (host-only), named by that commit: a run whose
// main is the cached one's gets a copy of it, with no git process. main
// is read from the repo's ref files; a repo whose HEAD is not main, or
// whose main cannot be read so, is bundled by git for each run.
func (s *Service) BundleKnowledge(ctx context.Context, path string) error {
	if s.Knowledge == nil {
		return nil
	}
	if err := s.setup(); err != nil {
		return err
	}
	tmp := path + ".new"
	defer os.Remove(tmp)
	var err error
	if main, ok := knowledgeMain(s.Knowledge.Dir); ok {
		err = s.cachedBundle(ctx, main, tmp)
	} else {
		err = s.makeBundle(ctx, tmp)
	}
	if err != nil {
		return fmt.Errorf("the knowledge bundle: %w", err)
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path) // scratch on tmpfs: gone with the run, nothing to make durable
}

// makeBundle runs git bundle create into path.
func (s *Service) makeBundle(ctx context.Context, path string) error {
	_, err := s.Git.Run(ctx, s.Knowledge.Dir, nil, "bundle", "create", "--quiet", path, "HEAD", "refs/heads/main")
	return err
}

// cachedBundle copies the cached bundle of main into path, making it
// first if the cache holds another commit's (or none).
func (s *Service) cachedBundle(ctx context.Context, main, path string) error {
	cache := filepath.Join(s.Dir, bundlePrefix+main+".bundle")
	if err := copyFile(cache, path); err == nil {
		return nil
	}
	if err := s.makeBundle(ctx, path); err != nil {
		return err
	}
	// The bundle is main as git found it, which may be newer than the
	// commit read above: it is kept under the name its header gives.
	got, err := bundleMain(path)
	if err != nil {
		return err
	}
	s.keepBundle(path, got)
	return nil
}

// keepBundle makes the bundle at path the cache of main (an atomic,
// durable write) and drops the cache of any other commit. A failure costs
// only a git bundle at the next run.
func (s *Service) keepBundle(path, main string) {
	name := bundlePrefix + main + ".bundle"
	data, err := os.ReadFile(path)
	if err != nil || fsx.WriteFile(filepath.Join(s.Dir, name), data, 0o600) != nil {
		return
	}
	ents, _ := os.ReadDir(s.Dir)
	for _, e := range ents {
		if n := e.Name(); n != name && strings.HasPrefix(n, bundlePrefix) && strings.HasSuffix(n, ".bundle") {
			os.Remove(filepath.Join(s.Dir, n))
		}
	}
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

// bundleMain is the commit a v2 bundle's header gives refs/heads/main.
func bundleMain(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	r := bufio.NewReader(io.LimitReader(f, 64<<10))
	if l, _ := r.ReadString('\n'); l != "# v2 git bundle\n" {
		return "", fmt.Errorf("%s: not a v2 git bundle", path)
	}
	for {
		l, err := r.ReadString('\n')
		if err != nil || l == "\n" {
			return "", fmt.Errorf("%s: no refs/heads/main in its header", path)
		}
		if id, ref, ok := strings.Cut(strings.TrimSuffix(l, "\n"), " "); ok && ref == "refs/heads/main" && isOID(id) {
			return id, nil
		}
	}
}

// copyFile copies src to dst (made new, 0600).
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
