package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSystemdUnitKeepsBoxesOnRestart pins the rule of docs/dispatch-and-box.md:
// under systemd the dispatcher's unit must use KillMode=process and
// Delegate=yes, or a restart of the dispatcher kills every box. The units
// are also checked with `systemd-analyze verify` when it is installed.
func TestSystemdUnitKeepsBoxesOnRestart(t *testing.T) {
	dir := filepath.Join("..", "..", "contrib", "systemd")
	unit, err := os.ReadFile(filepath.Join(dir, "roster-dispatch.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"KillMode=process", "Delegate=yes", "Type=simple"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(want) + `$`).Match(unit) {
			t.Errorf("roster-dispatch.service lacks %s", want)
		}
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed: units checked for their keys only")
	}
	// Verify copies whose programs exist here (the units name the
	// installed paths), without looking up man pages.
	tmp := t.TempDir()
	var files []string
	for _, name := range []string{"roster-dispatch.service", "roster-chat.service", "roster-snap-sweep.service", "roster-snap-sweep.timer"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		data = regexp.MustCompile(`/usr/local/bin/roster-[a-z]+`).ReplaceAll(data, []byte("/bin/true"))
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	out, err := exec.Command(analyze, append([]string{"verify", "--man=no"}, files...)...).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
