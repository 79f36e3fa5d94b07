package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/internal/testbin"
	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/tms"
)

func TestHostNetworkBoxReachesHostLoopback(t *testing.T) {
	f := newFixture(t, job, `network = "host"`)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	f.setJob(`bash -c 'exec 3<>/dev/tcp/127.0.0.1/` + port + `' && roster-task complete reached`)
	rec, _ := f.dispatch(tms.NewTask{Text: "reach the host"})
	if rec.Attested != tms.AttestedCompleted {
		t.Fatalf("attested %q: the box on the host network could not reach 127.0.0.1:%s\n%s", rec.Attested, port, f.transcript(rec.ID))
	}
	select {
	case <-accepted:
	default:
		t.Fatal("the host's listener saw no connection")
	}
}

func TestSpecRootfsIsTheBoxRoot(t *testing.T) {
	needRoot(t)
	// A root of its own: the host's /usr bound read-only (so nothing can
	// delete through it), merged-/usr links, and a marker file.
	r, err := os.MkdirTemp("", "roster-rootfs-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(r, 0o755)
	usr := filepath.Join(r, "usr")
	os.Mkdir(usr, 0o755)
	if err := unix.Mount("/usr", usr, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		t.Fatal(err)
	}
	mounted := true
	t.Cleanup(func() {
		if mounted && unix.Unmount(usr, unix.MNT_DETACH) != nil {
			return // never remove through a live bind of /usr
		}
		os.RemoveAll(r)
	})
	if err := unix.Mount("", usr, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		unix.Unmount(usr, unix.MNT_DETACH)
		mounted = false
		t.Fatal(err)
	}
	for _, l := range []string{"bin", "lib", "lib64", "sbin"} {
		if _, err := os.Stat("/usr/" + l); err == nil {
			os.Symlink("usr/"+l, filepath.Join(r, l))
		}
	}
	os.WriteFile(filepath.Join(r, "own-root-marker"), []byte("x"), 0o644)

	f := newFixture(t, job, "rootfs = "+strconv.Quote(r))
	f.setJob(`test -e /own-root-marker && test "$(id -u)" = ` + strconv.Itoa(f.uid) + ` && ! touch /x && roster-task complete`)
	rec, _ := f.dispatch(tms.NewTask{Text: "own root"})
	if rec.Attested != tms.AttestedCompleted {
		t.Fatalf("attested %q in a box on the spec's rootfs:\n%s", rec.Attested, f.transcript(rec.ID))
	}
	// The control: the generated root has no marker.
	if _, err := os.Stat(filepath.Join(home.ContainerRoot, "rootfs-1", "own-root-marker")); err == nil {
		t.Fatal("the generated root has the marker: the test proves nothing")
	}
}

func TestMissingConnectionPathIsRefusedBeforeTheBoxIsMade(t *testing.T) {
	missing := "/nonexistent-roster-test/docs"
	f := newFixture(t, job, "[[connection]]\nname = \"docs\"\npath = \""+missing+"\"\nat = \"docs\"\nmode = \"ro\"")
	code, _, errb := f.box("run", "dobby", "--", "true")
	want := "connection docs: host path " + missing + " does not exist"
	if code != 1 || !strings.Contains(errb, want) {
		t.Fatalf("exit %d, stderr %q; want 1 and %q", code, errb, want)
	}
	rec := f.lastRun()
	if rec.Ended != "error" || rec.Evidence == nil || !strings.Contains(rec.Evidence.Note, want) ||
		strings.Contains(rec.Evidence.Note, "libcontainer") || strings.Contains(rec.Evidence.Note, "mount") {
		t.Fatalf("record %+v evidence %+v", rec, rec.Evidence)
	}
	if _, err := os.Stat(filepath.Join(home.ContainerRoot, home.ContainerID(rec.ID))); err == nil {
		t.Fatal("a container was created for a spec with a missing connection")
	}
}

func TestSnapshotAfterARunIsRecorded(t *testing.T) {
	needRoot(t)
	// The suite with roster-snap beside roster-box: the supervisor takes
	// the snapshot after the run.
	dir := t.TempDir()
	if err := testbin.Build(dir, "roster-snap"); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"roster-task", "roster-lock", "roster-reaper"} {
		if err := os.Symlink(filepath.Join(os.Getenv("ROSTER_EXEC_PATH"), tool), filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("ROSTER_EXEC_PATH", dir)
	f := newFixture(t, job, "")
	f.setJob(`echo made > ~/store/made-in-run && roster-task complete`)
	rec, _ := f.dispatch(tms.NewTask{Text: "change the store"})
	if rec.Attested != tms.AttestedCompleted || !home.IsSnapshotID(rec.Snapshot) {
		t.Fatalf("attested %q snapshot %q; want completed and a snapshot id\n%s", rec.Attested, rec.Snapshot, f.transcript(rec.ID))
	}
	changes, err := os.ReadFile(home.StoreChanges(f.w.Run(rec.ID)))
	if err != nil || !strings.Contains(string(changes), "made-in-run") {
		t.Fatalf("store-changes.txt: %v\n%s", err, changes)
	}
}

// openPty returns a pseudo-terminal pair made on the host.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skip("no /dev/ptmx:", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

func TestAdhocRunFromATerminalGetsAPty(t *testing.T) {
	f := newFixture(t, job, "")
	m, s := openPty(t)
	unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 33, Col: 101})
	before, _ := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
	var out strings.Builder
	env := &cli.Env{Name: "roster-box", Stdin: s, Stdout: &out, Stderr: &out, Ctx: context.Background()}
	code := cli.MainEnv(env, &CLI{}, []string{"--home", f.h.Dir, "run", "dobby", "--", "sh", "-c",
		`test -t 0 && test -t 1 && test -t 2 && echo "tty=yes size=$(stty size)"; exit 3`})
	_ = m
	if code != 3 {
		t.Fatalf("exit %d, want 3: %s", code, out.String())
	}
	if !strings.Contains(out.String(), "tty=yes size=33 101") {
		t.Fatalf("the box's command had no terminal of the right size: %q", out.String())
	}
	rec := f.lastRun()
	if tr := f.transcript(rec.ID); !strings.Contains(tr, "tty=yes") {
		t.Fatalf("transcript %q", tr)
	}
	after, _ := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
	if *after != *before {
		t.Fatal("the terminal's modes were not restored after the run")
	}
	// The control: without a terminal the same command has none.
	code, stdout, _ := f.box("run", "dobby", "--", "sh", "-c", `test -t 0 || echo no-tty`)
	if code != 0 || !strings.Contains(stdout, "no-tty") {
		t.Fatalf("without a terminal: exit %d %q", code, stdout)
	}
}
