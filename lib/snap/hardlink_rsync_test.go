package snap

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rsyncItemize copies src over dst for real with rsync -aiH --delete in
// the C locale and returns its lines, paths (both sides of =>) prefixed
// with prefix as the change list writes them. A real run, not
// --dry-run: a dry run cannot see the links it would remake, so for a
// group whose leader is copied again it prints "hf.st...... b" instead of
// "hf.st...... b => a", and for a group whose mode changed it lists every
// name although the real run fixes them all through the first.
func rsyncItemize(t *testing.T, src, dst, prefix string) []string {
	t.Helper()
	cmd := exec.Command("rsync", "-aiH", "--delete", "--exclude=/.locks", src+"/", dst+"/")
	cmd.Env = append(os.Environ(), "LANG=C", "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("rsync: %v\n%s", err, out)
	}
	var ls []string
	for _, l := range lines(out) {
		if len(l) <= 12 {
			ls = append(ls, l)
			continue
		}
		p := l[12:]
		if p == "./" {
			p = ""
		}
		if a, b, ok := strings.Cut(p, " => "); ok {
			p = a + " => " + prefix + b
		}
		ls = append(ls, l[:12]+prefix+p)
	}
	return ls
}

// copyTree copies a tree as cp -a does (hardlinks within it kept).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
}

// A hardlink group is listed as rsync -aiH lists it: the leader's line,
// then "hf... name => leader" for every other name that is new, was
// another file, or must be linked again because the leader was copied
// again; nothing for a group that did not change. The leader is the one
// rsync picks (the first name, in rsync's order, that exists in the old
// tree, else the last), and a link added or removed is not taken for a
// content change although it sets the inode's ctime. diff against the
// live store lists the same.
func TestChangeListShowsHardlinksAsRsync(t *testing.T) {
	if _, err := exec.LookPath("rsync"); err != nil {
		t.Skip("rsync not installed (make deps installs it)")
	}
	w := newWorker(t, t.TempDir())
	s := w.Store()
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(name, data string) {
		write(t, filepath.Join(s, name), data, 0o644)
		os.Chtimes(filepath.Join(s, name), old, old)
	}
	link := func(from, to string) {
		os.MkdirAll(filepath.Dir(filepath.Join(s, to)), 0o755)
		if err := os.Link(filepath.Join(s, from), filepath.Join(s, to)); err != nil {
			t.Fatal(err)
		}
	}
	mk("keep1", "k")
	link("keep1", "keep2")
	mk("grow1", "g")
	link("grow1", "grow2")
	mk("solo", "s")
	mk("late", "l")
	mk("rm1", "r")
	link("rm1", "rm2")
	mk("sep1", "same")
	mk("sep2", "same")
	mk("md1", "mt")
	mk("md2", "mt")
	os.Chtimes(filepath.Join(s, "md2"), old.Add(time.Hour), old.Add(time.Hour))
	mk("chg1", "c")
	link("chg1", "chg2")
	mk("cm1", "m")
	link("cm1", "cm2")
	os.Chtimes(s, old, old)
	o := opts(10)
	r1 := take(t, w, o)

	link("grow1", "grow3")                           // a name added to a group
	link("solo", "solo2")                            // a name added to a single file
	link("late", "early")                            // ... that sorts before it
	os.Remove(filepath.Join(s, "rm2"))               // a name removed
	os.Remove(filepath.Join(s, "sep2"))              // another file, same attributes, becomes a link
	link("sep1", "sep2")                             //
	os.Remove(filepath.Join(s, "md2"))               // another file, other mtime, becomes a link
	link("md1", "md2")                               //
	write(t, filepath.Join(s, "chg1"), "new", 0o644) // a group's content, in place
	os.Chmod(filepath.Join(s, "cm1"), 0o600)         // a group's mode
	mk("nl\nB", "n")                                 // a new group, names escaped
	link("nl\nB", "nl\nA")
	mk("a/m", "x") // a new group across folders: rsync's order is zz, a.b/m, a/m, a/n
	link("a/m", "a/n")
	link("a/m", "a.b/m")
	link("a/m", "zz")
	for _, d := range []string{"a", "a.b"} {
		os.Chtimes(filepath.Join(s, d), old, old)
	}
	os.Chtimes(s, old.Add(2*time.Hour), old.Add(2*time.Hour))

	live, err := Diff(context.Background(), w, "", "")
	if err != nil {
		t.Fatal(err)
	}
	r2 := take(t, w, o)
	ours := lines(mustRead(t, w.SnapshotChanges(r2.ID)))

	cp := filepath.Join(t.TempDir(), "old")
	copyTree(t, filepath.Join(w.Snapshot(r1.ID), "store"), cp)
	theirs := rsyncItemize(t, s, cp, "store/")
	if strings.Join(sorted(ours), "\n") != strings.Join(sorted(theirs), "\n") {
		t.Fatalf("change list differs from rsync -aiH's:\nours:\n%s\nrsync:\n%s", strings.Join(sorted(ours), "\n"), strings.Join(sorted(theirs), "\n"))
	}
	for _, want := range []string{
		`hf+++++++++ store/grow3 => store/grow1`,
		`hf+++++++++ store/solo2 => store/solo`,
		`hf+++++++++ store/early => store/late`,
		`*deleting   store/rm2`,
		`hf          store/sep2 => store/sep1`,
		`hf..t...... store/md2 => store/md1`,
		`>f.st...... store/chg1`,
		`hf.st...... store/chg2 => store/chg1`,
		`.f...p..... store/cm1`,
		`>f+++++++++ store/nl\#012B`,
		`hf+++++++++ store/nl\#012A => store/nl\#012B`,
		`>f+++++++++ store/a/n`,
		`hf+++++++++ store/a/m => store/a/n`,
		`hf+++++++++ store/a.b/m => store/a/n`,
		`hf+++++++++ store/zz => store/a/n`,
	} {
		if !contains(ours, want) {
			t.Errorf("missing %q", want)
		}
	}
	for _, l := range ours {
		name, _, _ := strings.Cut(l[12:], " => ")
		for _, quiet := range []string{"keep1", "keep2", "grow1", "grow2", "rm1", "sep1", "md1", "solo", "late", "cm2"} {
			if name == "store/"+quiet {
				t.Errorf("unexpected line %q", l)
			}
		}
	}

	var diffed []string
	for i := range live {
		diffed = append(diffed, live[i].Line())
	}
	if strings.Join(sorted(diffed), "\n") != strings.Join(sorted(ours), "\n") {
		t.Errorf("diff against the live store differs from the take's change list:\ndiff:\n%s\ntake:\n%s", strings.Join(sorted(diffed), "\n"), strings.Join(sorted(ours), "\n"))
	}
}

// A restore's dry run lists links as rsync -aiH from the snapshot onto
// the live store would (its quick check): nothing for a group the live
// store still has linked, "hf          b => a" for a name the live store
// has as a separate copy.
func TestRestoreDryRunShowsHardlinksAsRsync(t *testing.T) {
	if _, err := exec.LookPath("rsync"); err != nil {
		t.Skip("rsync not installed (make deps installs it)")
	}
	w := newWorker(t, t.TempDir())
	s := w.Store()
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, n := range []string{"keep1", "split1"} {
		write(t, filepath.Join(s, n), "data", 0o644)
		os.Chtimes(filepath.Join(s, n), old, old)
	}
	os.Link(filepath.Join(s, "keep1"), filepath.Join(s, "keep2"))
	os.Link(filepath.Join(s, "split1"), filepath.Join(s, "split2"))
	os.Chtimes(s, old, old)
	r := take(t, w, opts(10))

	os.Remove(filepath.Join(s, "split2"))
	write(t, filepath.Join(s, "split2"), "data", 0o644)
	os.Chtimes(filepath.Join(s, "split2"), old, old)
	os.Chtimes(s, old.Add(2*time.Hour), old.Add(2*time.Hour))

	res, err := Restore(context.Background(), w, RestoreOptions{Options: opts(10), From: r.ID, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var ours []string
	for i := range res.Changes {
		ours = append(ours, res.Changes[i].Line())
	}
	cp := filepath.Join(t.TempDir(), "live")
	copyTree(t, s, cp)
	theirs := rsyncItemize(t, filepath.Join(w.Snapshot(r.ID), "store"), cp, "store/")
	if strings.Join(sorted(ours), "\n") != strings.Join(sorted(theirs), "\n") {
		t.Fatalf("restore --dry-run differs from rsync -aiH's:\nours:\n%s\nrsync:\n%s", strings.Join(sorted(ours), "\n"), strings.Join(sorted(theirs), "\n"))
	}
	if !contains(ours, `hf          store/split2 => store/split1`) {
		t.Errorf("missing the relink of split2: %q", ours)
	}
	for _, l := range ours {
		if strings.Contains(l, "keep") {
			t.Errorf("a group still linked in the live store is listed: %q", l)
		}
	}
}
