package repos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/runs"
)

// KnowledgeName is the knowledge repo's route, /git/knowledge (a [[repo]]
// may not take the name).
const KnowledgeName = config.KnowledgeRepo

// KnowledgeRunPrefix is the branch prefix of each run's own knowledge
// branch, run/RUN.
const KnowledgeRunPrefix = "run/"

// Knowledge is a run's access to its worker's knowledge repo
// (docs/repos.md, "The knowledge repo").
type Knowledge struct {
	Dir string // data/workers/W/knowledge.git
	// ReadOnly: the run serves a channel or carries its content, and may
	// only fetch.
	ReadOnly bool

	mu      sync.Mutex
	landed  string // the last commit this run landed on main
	commits int    // commits it landed on main, all pushes
}

// Access is "read" or "write".
func (k *Knowledge) Access() string {
	if k.ReadOnly {
		return "read"
	}
	return "write"
}

// grant is the knowledge repo as a grant: a host repo where the run may
// push its own branch any way it likes and main fast-forward only.
func (k *Knowledge) grant(run string) config.Repo {
	return config.Repo{Name: KnowledgeName, Remote: k.Dir, Push: []string{KnowledgeRunPrefix + run, "main"}, Force: "own", CI: true,
		MaxPush: config.DefaultRepoMaxPush, MaxBlob: config.DefaultRepoMaxBlob, MaxFiles: config.DefaultRepoMaxFiles}
}

// Record is run.json's git.knowledge for run.
func (k *Knowledge) Record(run string) *runs.GitKnowledge {
	k.mu.Lock()
	defer k.mu.Unlock()
	rec := &runs.GitKnowledge{Access: k.Access(), Landed: k.landed, Commits: k.commits}
	if !k.ReadOnly {
		rec.Branch = KnowledgeRunPrefix + run
	}
	return rec
}

// landedMain notes what a push that landed put on main.
func (s *Service) landedMain(ctx context.Context, dir string, cmds []Command) {
	for _, c := range cmds {
		if c.Ref != "refs/heads/main" || c.Delete() {
			continue
		}
		rng := c.New
		if !c.Create() {
			rng = c.Old + ".." + c.New
		}
		n := 0
		if out, err := s.Git.Run(ctx, dir, nil, "rev-list", "--count", rng); err == nil {
			n, _ = strconv.Atoi(strings.TrimSpace(string(out)))
		}
		k := s.Knowledge
		k.mu.Lock()
		k.landed, k.commits = c.New, k.commits+n
		k.mu.Unlock()
	}
}

// MakeKnowledge makes dir, a worker's knowledge repo, if it is missing: a
// bare repo whose main holds one empty commit, built beside dir and
// renamed into place (a crash leaves no half repo; of two makers, one
// wins and the other's is dropped).
func (g *Git) MakeKnowledge(ctx context.Context, dir, worker string) error {
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	tmp, err := os.MkdirTemp(parent, ".knowledge-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o700); err != nil {
		return err
	}
	if _, err := g.Run(ctx, tmp, nil, "init", "--quiet", "--bare", "--template=", "--initial-branch=main"); err != nil {
		return fmt.Errorf("make the knowledge repo: %w", err)
	}
	tree, err := g.Run(ctx, tmp, nil, "hash-object", "-w", "-t", "tree", "/dev/null")
	if err != nil {
		return fmt.Errorf("make the knowledge repo: %w", err)
	}
	when := strconv.FormatInt(time.Now().Unix(), 10) + " +0000"
	who := []string{"GIT_AUTHOR_NAME=roster", "GIT_AUTHOR_EMAIL=roster@roster.invalid", "GIT_AUTHOR_DATE=" + when,
		"GIT_COMMITTER_NAME=roster", "GIT_COMMITTER_EMAIL=roster@roster.invalid", "GIT_COMMITTER_DATE=" + when}
	commit, err := g.Run(ctx, tmp, who, "commit-tree", "-m", "knowledge of "+worker+"\n\nWhat this worker's clean runs learned, one commit at a time.", strings.TrimSpace(string(tree)))
	if err != nil {
		return fmt.Errorf("make the knowledge repo: %w", err)
	}
	if _, err := g.Run(ctx, tmp, nil, "update-ref", "refs/heads/main", strings.TrimSpace(string(commit))); err != nil {
		return fmt.Errorf("make the knowledge repo: %w", err)
	}
	if err := fsx.SyncDir(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, err2 := os.Stat(filepath.Join(dir, "HEAD")); err2 == nil {
			return nil // another maker won
		}
		return fmt.Errorf("make the knowledge repo: %w", err)
	}
	return fsx.SyncDir(parent)
}

// MakeWorkerKnowledge makes a new worker's knowledge repo at dir if git
// is on the host (roster-task worker add; without git it is made at the
// worker's first run on a host that has it).
func MakeWorkerKnowledge(ctx context.Context, dir, worker string) error {
	bin, err := Find()
	if err != nil {
		return nil
	}
	return (&Git{Bin: bin}).MakeKnowledge(ctx, dir, worker)
}

// PruneRunBranches deletes the run/RUN branches of dir whose run is gone
// (keep tells a run that still has its record): knowledge branches go
// with their runs (runs.keep). It returns the branches deleted.
func (g *Git) PruneRunBranches(ctx context.Context, dir string, keep func(run string) bool) ([]string, error) {
	out, err := g.Run(ctx, dir, nil, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/"+KnowledgeRunPrefix)
	if err != nil {
		return nil, err
	}
	var gone []string
	var stdin strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		ref, id, ok := strings.Cut(l, " ")
		if !ok {
			continue
		}
		run := strings.TrimPrefix(ref, "refs/heads/"+KnowledgeRunPrefix)
		if strings.Contains(run, "/") || keep(run) {
			continue
		}
		gone = append(gone, ref)
		fmt.Fprintf(&stdin, "delete %s %s\n", ref, id) // only if it still points where it did
	}
	if len(gone) == 0 {
		return nil, nil
	}
	cmd := g.Cmd(ctx, dir, nil, nil, "update-ref", "--stdin")
	cmd.Stdin = strings.NewReader(stdin.String())
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("prune knowledge branches: %v: %s", err, clip(string(b), 300))
	}
	return gone, nil
}
