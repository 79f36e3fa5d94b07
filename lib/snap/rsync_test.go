package snap

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The change list uses rsync's letters: for the same two trees, rsync -ai
// --delete --dry-run lists the same lines (paths prefixed with store/),
// names escaped the same way (rsync in the C locale).
func TestChangeListMatchesRsyncItemize(t *testing.T) {
	needRoot(t)
	if _, err := exec.LookPath("rsync"); err != nil {
		t.Skip("rsync not installed (make deps installs it)")
	}
	w := newWorker(t, t.TempDir())
	s := w.Store()
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, n := range []string{"content", "touch", "chmod", "chown", "chgrp", "gone", "d/gone", "d/stay", "new\nline", "back\\#123", "\xc3\xa9t\xe9"} {
		write(t, filepath.Join(s, n), "data of "+n, 0o644)
		os.Chtimes(filepath.Join(s, n), old, old)
	}
	os.Symlink("../x", filepath.Join(s, "retarget"))
	os.Symlink("same", filepath.Join(s, "samelink"))
	os.MkdirAll(filepath.Join(s, "dmode"), 0o755)
	for _, d := range []string{"d", "dmode"} {
		os.Chtimes(filepath.Join(s, d), old, old)
	}
	o := opts(10)
	r1 := take(t, w, o)

	write(t, filepath.Join(s, "content"), "longer data now", 0o644)
	os.Chtimes(filepath.Join(s, "touch"), old.Add(time.Hour), old.Add(time.Hour))
	os.Chmod(filepath.Join(s, "chmod"), 0o600)
	os.Chown(filepath.Join(s, "chown"), 1234, 0)
	os.Chown(filepath.Join(s, "chgrp"), 0, 4321)
	os.Remove(filepath.Join(s, "gone"))
	os.Remove(filepath.Join(s, "d/gone"))
	os.Chtimes(filepath.Join(s, "d"), old, old)
	os.Remove(filepath.Join(s, "retarget"))
	os.Symlink("../y", filepath.Join(s, "retarget"))
	unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(s, "retarget"), []unix.Timespec{unix.NsecToTimespec(old.UnixNano()), unix.NsecToTimespec(old.UnixNano())}, unix.AT_SYMLINK_NOFOLLOW)
	os.Chmod(filepath.Join(s, "dmode"), 0o700)
	os.Chtimes(filepath.Join(s, "dmode"), old, old)
	write(t, filepath.Join(s, "fresh/file"), "new", 0o644)
	os.Symlink("/etc/passwd", filepath.Join(s, "newlink"))
	write(t, filepath.Join(s, "new\nline"), "changed name with newline", 0o644)
	// rsync compares times to the second here: move the top folder's by more.
	os.Chtimes(s, old.Add(2*time.Hour), old.Add(2*time.Hour))
	r2 := take(t, w, o)

	ours := lines(mustRead(t, w.SnapshotChanges(r2.ID)))
	cmd := exec.Command("rsync", "-ai", "--delete", "--dry-run", "--exclude=/.locks", s+"/", filepath.Join(w.Snapshot(r1.ID), "store")+"/")
	cmd.Env = append(os.Environ(), "LANG=C", "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("rsync: %v\n%s", err, out)
	}
	var theirs []string
	for _, l := range lines(out) {
		if len(l) > 12 {
			p := l[12:]
			if p == "./" {
				p = ""
			}
			l = l[:12] + "store/" + p
		}
		theirs = append(theirs, l)
	}
	if strings.Join(sorted(ours), "\n") != strings.Join(sorted(theirs), "\n") {
		t.Fatalf("change list differs from rsync's:\nours:\n%s\nrsync:\n%s", strings.Join(sorted(ours), "\n"), strings.Join(sorted(theirs), "\n"))
	}
	for _, want := range []string{`>f.st...... store/new\#012line`, `cLc.t...... store/retarget -> ../y`, `.d...p..... store/dmode/`, `*deleting   store/d/gone`} {
		if !contains(ours, want) {
			t.Errorf("missing %q", want)
		}
	}
}
