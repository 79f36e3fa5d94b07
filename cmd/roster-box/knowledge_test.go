package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roster-sh/roster/lib/repos"
	"github.com/roster-sh/roster/lib/repos/gittest"
	"github.com/roster-sh/roster/lib/tms"
)

// TestKnowledgeCloneInTheBoxLandsOnMain: a clean run starts with
// ~/knowledge cloned on its own branch run/RUN, lands a commit on main
// fast-forward and its branch, and run.json says what it landed; a
// relay's run gets a read-only clone on main (it reads what was landed)
// and its push is refused knowledge_read_only, leaving main where it was.
func TestKnowledgeCloneInTheBoxLandsOnMain(t *testing.T) {
	f := newFixture(t, job, "")
	f.setJob(`set -e
cd ~/knowledge
git branch --show-current > ~/store/branch
echo learned > notes.md
git add notes.md
git commit -q -m "what this run learned"
git push -q origin HEAD:main
git push -q origin HEAD
git rev-parse HEAD > ~/store/head
roster-task complete learned`)
	rec, _ := f.dispatch(tms.NewTask{Text: "learn"})
	if rec.Attested != tms.AttestedCompleted {
		t.Fatalf("attested %q\n%s", rec.Attested, f.transcript(rec.ID))
	}
	kdir := f.w.Knowledge()
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(f.w.Store(), name))
		return strings.TrimSpace(string(b))
	}
	head := read("head")
	if got := read("branch"); got != repos.KnowledgeRunPrefix+rec.ID {
		t.Fatalf("the clone is on %q, want run/%s", got, rec.ID)
	}
	if got := gittest.Git(t, kdir, "rev-parse", "main"); got != head {
		t.Fatalf("knowledge main is %s, the run pushed %s", got, head)
	}
	if got := gittest.Git(t, kdir, "rev-parse", repos.KnowledgeRunPrefix+rec.ID); got != head {
		t.Fatalf("the run's branch is %s, want %s", got, head)
	}
	// The clone came from the run's knowledge objects: the gateway served
	// no fetch.
	for _, l := range ledger(t, f, rec.ID) {
		if l.Kind == "git" && l.Service == "upload-pack" {
			t.Errorf("the knowledge clone went through the gateway: %+v", l)
		}
	}
	k := rec.Git.Knowledge
	if rec.Git == nil || k == nil || k.Access != "write" || k.Branch != "run/"+rec.ID || k.Landed != head || k.Commits != 1 {
		t.Fatalf("run.json git: %+v", rec.Git)
	}

	f.setJob(`cd ~/knowledge || exit 3
git branch --show-current > ~/store/branch2
cp notes.md ~/store/notes2
echo "what the conversation said" > said.md
git add said.md
git commit -q -m said
if git push origin HEAD:main 2> ~/store/push2.err; then echo PUSHED > ~/store/push2.ok; fi
roster-task complete read`)
	rec2, _ := f.dispatch(tms.NewTask{Text: "hello", Kind: tms.KindRelay, Channel: "chat", From: "alice"})
	if got := read("branch2"); got != "main" {
		t.Fatalf("a relay's clone is on %q, want main", got)
	}
	if got := read("notes2"); got != "learned" {
		t.Fatalf("the relay's clone does not have what was landed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(f.w.Store(), "push2.ok")); err == nil {
		t.Fatal("a relay's run pushed to knowledge main")
	}
	if got := read("push2.err"); !strings.Contains(got, "knowledge_read_only") {
		t.Fatalf("git did not print the refusal:\n%s", got)
	}
	if got := gittest.Git(t, kdir, "rev-parse", "main"); got != head {
		t.Fatalf("knowledge main moved to %s", got)
	}
	if k := rec2.Git.Knowledge; k == nil || k.Access != "read" || k.Landed != "" {
		t.Fatalf("the relay's run.json git: %+v", rec2.Git)
	}
	// The journal has each push: an action line by worker, no version.
	lines, err := f.part.Journal(0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines {
		if l.Event == tms.EvAction && l.Action != nil && l.Action.Kind == tms.ActPush {
			if l.Version != 0 || l.By != tms.ByWorker || len(l.Push) != 1 || l.Push[0].Repo != repos.KnowledgeName {
				t.Fatalf("push line %+v", l)
			}
			who := "clean"
			if l.Run == rec2.ID {
				who = "relay"
			}
			got = append(got, who+" "+strings.TrimPrefix(l.Push[0].Ref, "refs/heads/")+" "+l.Action.Outcome)
		}
	}
	want := []string{"clean main ok", "clean run/" + rec.ID + " ok", "relay main refused: knowledge_read_only"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("journal push lines:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
