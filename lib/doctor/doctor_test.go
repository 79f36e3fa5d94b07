package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roster-sh/roster/lib/home"
)

func find(r *Report, check, level, text string) bool {
	for _, f := range r.Findings {
		if f.Check == check && f.Level == level && strings.Contains(f.Message, text) {
			return true
		}
	}
	return false
}

func write(t *testing.T, p, data string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A v1 cgroup root without pids, a kernel without cgroup namespaces or
// seccomp, and low inotify limits are each named.
func TestHostFaults(t *testing.T) {
	cg, proc := t.TempDir(), t.TempDir()
	os.Mkdir(filepath.Join(cg, "memory"), 0o755)
	os.Mkdir(filepath.Join(cg, "cpu,cpuacct"), 0o755)
	for _, ns := range []string{"mnt", "pid", "net", "ipc", "uts"} {
		write(t, filepath.Join(proc, "self", "ns", ns), "")
	}
	write(t, filepath.Join(proc, "sys", "fs", "inotify", "max_user_watches"), "10\n")
	write(t, filepath.Join(proc, "sys", "fs", "inotify", "max_user_instances"), "128\n")
	r := &Report{}
	o := Options{CgroupRoot: cg, ProcRoot: proc}
	o.defaults()
	checkHost(r, o)
	checkInotify(r, o, 100)
	for _, w := range []struct{ check, level, text string }{
		{"cgroup", Problem, "cgroup v1 without the pids controller"},
		{"host", Problem, "the kernel has no cgroup namespaces"},
		{"host", Problem, "no seccomp filters"},
		{"host", Warning, "max_user_watches is 10; 100 workers want 164"},
	} {
		if !find(r, w.check, w.level, w.text) {
			t.Errorf("no %s %s %q in %+v", w.level, w.check, w.text, r.Findings)
		}
	}
	// the real host: cgroups and namespaces are there (the tests make boxes)
	r = &Report{}
	o = Options{}
	o.defaults()
	checkHost(r, o)
	if n := r.Count(Problem); n != 0 {
		t.Errorf("this host: %+v", r.Findings)
	}
}

// Generated /etc folders: one a live mount namespace uses is kept, a new
// one is kept, an old unused one is named and, with Clean, removed.
func TestGeneratedCleanup(t *testing.T) {
	root, proc := t.TempDir(), t.TempDir()
	for _, n := range []string{"etc-used", "etc-old", "etc-new", ".etc-crashed"} {
		os.Mkdir(filepath.Join(root, n), 0o755)
	}
	old := time.Now().Add(-time.Hour)
	for _, n := range []string{"etc-used", "etc-old", ".etc-crashed"} {
		os.Chtimes(filepath.Join(root, n), old, old)
	}
	os.MkdirAll(filepath.Join(proc, "42", "ns"), 0o755)
	os.Symlink("mnt:[1]", filepath.Join(proc, "42", "ns", "mnt"))
	write(t, filepath.Join(proc, "42", "mountinfo"), "78 71 254:0 /run/roster/etc-used /etc ro,nosuid - ext4 /dev/vda rw\n")
	o := Options{ContainerRoot: root, ProcRoot: proc}
	o.defaults()
	r := &Report{}
	checkGenerated(r, o)
	if !find(r, "generated", Warning, "2 generated /etc folders no box uses any more (2 in use or new)") {
		t.Fatalf("%+v", r.Findings)
	}
	o.Clean = true
	r = &Report{}
	checkGenerated(r, o)
	left, _ := os.ReadDir(root)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "etc-new etc-used" || !find(r, "generated", OK, "removed 2") {
		t.Fatalf("left %v; %+v", names, r.Findings)
	}
}

// A repo granted with no git on PATH is a problem naming the worker.
func TestGitMissing(t *testing.T) {
	dir := t.TempDir()
	h, err := home.At(dir)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(h.Data(), 0o700)
	write(t, h.OrgFile(), "")
	write(t, h.SpecFile("dobby"), "uid = 200000\ncommand = [\"/bin/true\"]\nheartbeat = \"off\"\nnetwork = \"gateway\"\n\n[[repo]]\nname = \"app\"\nremote = \"https://forge.test/acme/app.git\"\ncredential = []\npush = [\"roster/dobby/*\"]\n")
	t.Setenv("PATH", t.TempDir())
	r := Run(context.Background(), Options{Home: h, ContainerRoot: t.TempDir()})
	if !find(r, "git", Problem, "needs git 2.38 or newer on the host, and none was found") {
		t.Fatalf("%+v", r.Findings)
	}
}
