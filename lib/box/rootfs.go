package box

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/roster-sh/roster/lib/home"
)

// The generated root: one shared, root-owned skeleton (mount points and the
// merged-/usr links) under /run/roster, used read-only by every box that has
// no rootfs of its own; runc bind-mounts it onto itself and pivots into it,
// so boxes never write to it. The number goes up when the skeleton
// changes (2: the mount point of roster-reaper, the box's pid 1), so a
// root made by an older roster-box is never used with mounts it lacks.
const rootfsName = "rootfs-2"

var rootfsDirs = []string{"usr", "etc", "home/worker", "tmp", "run", "proc", "dev", "opt/roster/bin"}
var rootfsLinks = [][2]string{{"bin", "usr/bin"}, {"lib", "usr/lib"}, {"lib64", "usr/lib64"}, {"sbin", "usr/sbin"}}

// SharedRootfs returns the generated root, making it once (built beside and
// renamed into place, so concurrent supervisors see it whole or not at all).
func SharedRootfs(tools []string) (string, error) {
	dst := home.GeneratedRoot(rootfsName)
	if _, err := os.Lstat(filepath.Join(dst, ".complete")); err == nil {
		return dst, nil
	}
	if err := os.MkdirAll(home.ContainerRoot, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(home.ContainerRoot, ".rootfs-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	for _, d := range rootfsDirs {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			return "", err
		}
	}
	for _, l := range rootfsLinks {
		if _, err := os.Stat("/" + l[1]); err != nil {
			continue // e.g. no /usr/lib64 on this architecture
		}
		if err := os.Symlink(l[1], filepath.Join(tmp, l[0])); err != nil {
			return "", err
		}
	}
	for _, t := range tools {
		if err := os.WriteFile(filepath.Join(tmp, "opt/roster/bin", t), nil, 0o755); err != nil {
			return "", err
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dst); err != nil {
		if _, err2 := os.Lstat(filepath.Join(dst, ".complete")); err2 == nil {
			return dst, nil // another supervisor made it first
		}
		return "", fmt.Errorf("generated root: %w", err)
	}
	return dst, nil
}

// scratchDir is a run's host-side scratch folder outside the data tree:
// the generated /etc and the $HOME/self folder. A reboot clears it.
func scratchDir(run string) string {
	return home.BoxScratch(run)
}

// RemoveScratch deletes a run's scratch folder (after Destroy, or by reap).
func RemoveScratch(run string) error { return os.RemoveAll(scratchDir(run)) }

// makeScratch writes the run's generated /etc and $HOME/self skeleton and
// returns their paths. briefing is the compiled briefing.
func makeScratch(s *Spec, briefing []byte) (etc, self string, err error) {
	dir := scratchDir(s.Run)
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return "", "", err
	}
	os.RemoveAll(dir) // a leftover from a crashed attempt of the same run
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", "", err
	}
	etc = filepath.Join(dir, "etc")
	self = filepath.Join(dir, "self")
	uid := strconv.Itoa(s.UID)
	files := map[string]string{
		"passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\n" +
			"worker:x:" + uid + ":" + uid + ":" + s.Worker + ":" + BoxHome + ":/bin/sh\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"group":         "root:x:0:\nworker:x:" + uid + ":\nnogroup:x:65534:\n",
		"hosts":         "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t" + hostname(s) + "\n",
		"hostname":      hostname(s) + "\n",
		"nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n",
		"resolv.conf":   resolvConf(s),
	}
	for _, d := range []string{etc, filepath.Join(etc, "ssl", "certs"), self, filepath.Join(self, "view"),
		filepath.Join(self, "runs"), filepath.Join(self, "outbox"), filepath.Join(self, "agent")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", "", err
		}
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(text), 0o644); err != nil {
			return "", "", err
		}
	}
	// The dynamic loader's cache: not secret, and without it every program
	// in the box searches the library folders.
	if data, err := os.ReadFile("/etc/ld.so.cache"); err == nil && s.Rootfs == "" {
		_ = os.WriteFile(filepath.Join(etc, "ld.so.cache"), data, 0o644)
	}
	if err := os.WriteFile(filepath.Join(self, "briefing.md"), briefing, 0o644); err != nil {
		return "", "", err
	}
	if err := os.Symlink("view/schedule.json", filepath.Join(self, "schedule.json")); err != nil {
		return "", "", err
	}
	return etc, self, nil // /run is a tmpfs: nothing here needs to survive a crash
}

func hostname(s *Spec) string { return "roster-" + s.Worker }

// resolvConf is the host's resolv.conf for a box on the host network, and
// an empty one (loopback only: no resolver reachable) otherwise.
func resolvConf(s *Spec) string {
	if s.Network != "host" {
		return "# no resolver in this box (network = \"" + s.Network + "\"): names are the gateway's to resolve\n"
	}
	data, err := os.ReadFile("/etc/resolv.conf")
	if err != nil || strings.Contains(string(data), "\x00") {
		return ""
	}
	return string(data)
}
