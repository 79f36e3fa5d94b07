package agent

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestSetupWritesThePlanOwnedByTheBoxUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root; CI runs as root")
	}
	run := t.TempDir()
	pi, _ := For("pi")
	p, _ := pi.Prepare(anthropicInput())
	dir := filepath.Join(run, "agent")
	if err := Setup(dir, 200123, p); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{".", "pi", "pi/models.json", "sessions"} {
		st, err := os.Lstat(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		if uid := st.Sys().(*syscall.Stat_t).Uid; uid != 200123 {
			t.Errorf("%s owned by %d", rel, uid)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "pi/models.json"))
	if string(b) != string(p.Files["pi/models.json"]) {
		t.Errorf("models.json %s", b)
	}
	if err := Setup(dir, 200123, p); err == nil {
		t.Error("an existing agent folder was set up again")
	}
}

func TestSessionFileNamesOnlyARegularFileInside(t *testing.T) {
	run := t.TempDir()
	dir := filepath.Join(run, "agent")
	pi, _ := For("pi")
	pp, _ := pi.Prepare(anthropicInput())
	c, _ := For("claude")
	cp, _ := c.Prepare(anthropicInput())
	os.MkdirAll(filepath.Join(dir, "sessions"), 0o755)
	os.MkdirAll(filepath.Join(dir, "claude/projects/-home-worker"), 0o755)
	os.WriteFile(filepath.Join(dir, "sessions/2026-12-01T09-20-50-172Z_abc.jsonl"), []byte("{}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "claude/projects/-home-worker/def.jsonl"), []byte("{}\n"), 0o644)
	os.Symlink("/etc/passwd", filepath.Join(dir, "sessions/x_link.jsonl"))
	os.Mkdir(filepath.Join(dir, "sessions/x_dir.jsonl"), 0o755)
	for _, tc := range []struct {
		a    *Agent
		p    *Plan
		id   string
		want string
	}{
		{pi, pp, "abc", "agent/sessions/2026-12-01T09-20-50-172Z_abc.jsonl"},
		{c, cp, "def", "agent/claude/projects/-home-worker/def.jsonl"},
		{pi, pp, "link", ""},
		{pi, pp, "dir", ""},
		{pi, pp, "../x", ""},
		{pi, pp, "*", ""},
		{pi, pp, "", ""},
		{c, cp, "abc", ""},
	} {
		if got := tc.a.SessionFile(dir, tc.p, tc.id); got != tc.want {
			t.Errorf("%s %q: %q, want %q", tc.a.Name, tc.id, got, tc.want)
		}
	}
}

func TestBoundEmptiesAnOverfullAgentFolder(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sessions"), 0o755)
	os.WriteFile(filepath.Join(dir, "sessions/s.jsonl"), make([]byte, 64<<10), 0o644)
	os.Symlink("/usr", filepath.Join(dir, "usr")) // never followed, never counted as /usr
	size, emptied, err := Bound(dir, 1<<20)
	if err != nil || emptied || size < 64<<10 || size > 1<<20 {
		t.Fatalf("size %d emptied %v err %v", size, emptied, err)
	}
	size, emptied, err = Bound(dir, 32<<10)
	if err != nil || !emptied || size < 64<<10 {
		t.Fatalf("size %d emptied %v err %v", size, emptied, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left %v", left)
	}
	if _, err := os.Stat("/usr/bin"); err != nil {
		t.Fatal("the link's target went too")
	}
}
