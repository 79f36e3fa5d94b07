package gateway

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/roster-sh/roster/lib/repos"
	"github.com/roster-sh/roster/lib/repos/gittest"
)

// knowledgeRig is a gateway serving run's access to a worker's knowledge
// repo (made fresh), reached by real git clients over loopback TCP.
type knowledgeRig struct {
	*rig
	dir string // the knowledge repo
	url string
	svc *repos.Service
}

func newKnowledgeRig(t *testing.T, run string, readOnly bool) *knowledgeRig {
	t.Helper()
	wdir := t.TempDir()
	k := &repos.Knowledge{Dir: filepath.Join(wdir, "knowledge.git"), ReadOnly: readOnly}
	svc := &repos.Service{Git: &repos.Git{}, Worker: "dobby", Dir: filepath.Join(wdir, "repos"), Run: run,
		Knowledge: k, HookArgv: []string{os.Args[0]}}
	if err := svc.PrepareKnowledge(context.Background()); err != nil {
		t.Fatal(err)
	}
	rg := newRig(t, Config{Git: svc, Run: run})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go rg.g.Serve(l)
	return &knowledgeRig{rig: rg, dir: k.Dir, url: "http://" + l.Addr().String() + "/git/knowledge", svc: svc}
}

func (k *knowledgeRig) clone(t *testing.T) string {
	t.Helper()
	work := filepath.Join(t.TempDir(), "knowledge")
	gittest.Git(t, "", "clone", "-q", k.url, work)
	return work
}

func (k *knowledgeRig) main(t *testing.T) string {
	return gittest.Git(t, k.dir, "rev-parse", "refs/heads/main")
}

func TestKnowledgeIsMadeOnceWithAnEmptyFirstCommit(t *testing.T) {
	k := newKnowledgeRig(t, "r1", false)
	first := k.main(t)
	if got := gittest.Git(t, k.dir, "ls-tree", "-r", "main"); got != "" {
		t.Fatalf("the first commit's tree is not empty: %q", got)
	}
	if err := k.svc.PrepareKnowledge(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := k.svc.Git.MakeKnowledge(context.Background(), k.dir, "dobby"); err != nil {
		t.Fatal(err)
	}
	if got := k.main(t); got != first {
		t.Fatalf("making it again moved main: %s, was %s", got, first)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(k.dir), ".knowledge-*")); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}

func TestKnowledgeRunBranchFreelyMainFastForwardOnly(t *testing.T) {
	k := newKnowledgeRig(t, "r1", false)
	work := k.clone(t)
	gittest.Git(t, work, "checkout", "-q", "-b", "run/r1")
	one := commitFile(t, work, "a.md", "one\n")
	if out, ok := push(t, work, "origin", "HEAD:main"); !ok {
		t.Fatalf("fast-forward of main: %s", out)
	}
	if out, ok := push(t, work, "origin", "run/r1"); !ok {
		t.Fatalf("push of the run's branch: %s", out)
	}
	two := commitFile(t, work, "b.md", "two\n")
	if out, ok := push(t, work, "origin", "HEAD:main"); !ok {
		t.Fatalf("second fast-forward of main: %s", out)
	}
	if got := k.main(t); got != two {
		t.Fatalf("main is %s, want %s", got, two)
	}
	rec := k.svc.Knowledge.Record("r1")
	if rec.Access != "write" || rec.Branch != "run/r1" || rec.Landed != two || rec.Commits != 2 {
		t.Fatalf("record %+v, want write run/r1 landed %s 2 commits", rec, two)
	}
	// The run's own branch: force is fine.
	gittest.Git(t, work, "reset", "-q", "--hard", one)
	commitFile(t, work, "c.md", "other\n")
	if out, ok := push(t, work, "--force", "origin", "run/r1"); !ok {
		t.Fatalf("force push of the run's own branch: %s", out)
	}
	// main: never rewritten; another run's branch or any other: not pushed.
	objs := gittest.Objects(t, k.dir)
	for _, c := range []struct{ ref, want string }{
		{"+HEAD:main", "force_refused"},
		{"HEAD:run/r2", "ref_not_granted"},
		{"HEAD:topic", "ref_not_granted"},
		{"HEAD:refs/tags/v1", "tag"},
	} {
		out, ok := push(t, work, "origin", c.ref)
		if ok || !strings.Contains(out, c.want) {
			t.Fatalf("push %s: ok=%v, want %q:\n%s", c.ref, ok, c.want, out)
		}
	}
	if got := k.main(t); got != two {
		t.Fatalf("a refused push moved main to %s", got)
	}
	if got := gittest.Objects(t, k.dir); got != objs {
		t.Fatal("a refused push left objects in the knowledge repo")
	}
}

func TestKnowledgeTwoRunsRacingOnMain(t *testing.T) {
	k := newKnowledgeRig(t, "r1", false)
	a, b := k.clone(t), k.clone(t)
	commitFile(t, a, "a.md", "from a\n")
	commitFile(t, b, "b.md", "from b\n")
	if out, ok := push(t, a, "origin", "HEAD:main"); !ok {
		t.Fatalf("first push: %s", out)
	}
	out, ok := push(t, b, "origin", "HEAD:main")
	if ok || !strings.Contains(out, "fetch first") {
		t.Fatalf("the second run's push: ok=%v, want git's own fetch first:\n%s", ok, out)
	}
	// As the briefing says: fetch, rebase, push again.
	gittest.Git(t, b, "pull", "-q", "--rebase", "origin", "main")
	if out, ok := push(t, b, "origin", "HEAD:main"); !ok {
		t.Fatalf("push after the rebase: %s", out)
	}
	if got := gittest.Git(t, k.dir, "log", "--format=%s", "main"); got != "change b.md\nchange a.md\nknowledge of dobby" {
		t.Fatalf("main's history:\n%s", got)
	}
}

func TestKnowledgeConcurrentPushesOneLands(t *testing.T) {
	k := newKnowledgeRig(t, "r1", false)
	const n = 4
	works := make([]string, n)
	for i := range works {
		works[i] = k.clone(t)
		commitFile(t, works[i], "n.md", strings.Repeat("x", i+1)+"\n")
	}
	outs, oks := make([]string, n), make([]bool, n)
	var wg sync.WaitGroup
	for i := range works {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			outs[i], oks[i] = push(t, works[i], "origin", "HEAD:main")
		}(i)
	}
	wg.Wait()
	landed := 0
	for i := range works {
		if oks[i] {
			landed++
			if got := k.main(t); got != gittest.Git(t, works[i], "rev-parse", "HEAD") {
				t.Fatalf("push %d succeeded but main is %s", i, got)
			}
			continue
		}
		if !strings.Contains(outs[i], "fetch first") && !strings.Contains(outs[i], "fetch_first") {
			t.Fatalf("push %d refused without fetch first:\n%s", i, outs[i])
		}
	}
	if landed != 1 {
		t.Fatalf("%d of %d racing pushes landed, want exactly 1:\n%s", landed, n, strings.Join(outs, "\n--\n"))
	}
	if err := exec0(k.dir, "fsck", "--no-progress"); err != nil {
		t.Fatalf("fsck after the race: %v", err)
	}
}

func exec0(dir string, args ...string) error {
	return gittest.Cmd(dir, args...).Run()
}

func TestKnowledgeReadOnlyRunMayOnlyFetch(t *testing.T) {
	k := newKnowledgeRig(t, "r1", true)
	work := k.clone(t)
	objs, main := gittest.Objects(t, k.dir), k.main(t)
	commitFile(t, work, "secret.md", "what the conversation said\n")
	for _, ref := range []string{"HEAD:main", "HEAD:run/r1"} {
		out, ok := push(t, work, "origin", ref)
		if ok || !strings.Contains(out, "knowledge_read_only") {
			t.Fatalf("push %s from a channel run: ok=%v:\n%s", ref, ok, out)
		}
	}
	if k.main(t) != main || gittest.Objects(t, k.dir) != objs {
		t.Fatal("a read-only run's refused push changed the knowledge repo")
	}
	if rec := k.svc.Knowledge.Record("r1"); rec.Access != "read" || rec.Branch != "" || rec.Landed != "" {
		t.Fatalf("record %+v", rec)
	}
	var kinds []string
	for _, l := range k.lines() {
		for _, r := range l.Refs {
			kinds = append(kinds, r.Refusal)
		}
	}
	if len(kinds) != 2 || kinds[0] != repos.RefuseReadOnly {
		t.Fatalf("ledger refusals %v", kinds)
	}
}

func TestKnowledgeRunBranchesPrunedWithTheirRuns(t *testing.T) {
	k := newKnowledgeRig(t, "r3", false)
	main := k.main(t)
	for _, b := range []string{"run/r1", "run/r2", "run/x/y", "topic"} {
		gittest.Git(t, k.dir, "update-ref", "refs/heads/"+b, main)
	}
	gone, err := k.svc.Git.PruneRunBranches(context.Background(), k.dir, func(run string) bool { return run == "r2" })
	if err != nil {
		t.Fatal(err)
	}
	if len(gone) != 1 || gone[0] != "refs/heads/run/r1" {
		t.Fatalf("pruned %v, want run/r1 only", gone)
	}
	got := gittest.Git(t, k.dir, "for-each-ref", "--format=%(refname)")
	if got != "refs/heads/main\nrefs/heads/run/r2\nrefs/heads/run/x/y\nrefs/heads/topic" {
		t.Fatalf("refs left:\n%s", got)
	}
}
