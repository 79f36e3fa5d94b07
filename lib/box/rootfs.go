package box

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
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

// makeScratch writes the run's $HOME/self skeleton, finds (or makes) its
// generated /etc and returns their paths. briefing is the compiled
// briefing.
func makeScratch(s *Spec, briefing []byte) (etc, self string, err error) {
	if etc, err = sharedEtc(s); err != nil {
		return "", "", err
	}
	dir := scratchDir(s.Run)
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return "", "", err
	}
	os.RemoveAll(dir) // a leftover from a crashed attempt of the same run
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", "", err
	}
	self = filepath.Join(dir, "self")
	for _, d := range []string{self, filepath.Join(self, "view"), filepath.Join(self, "runs"),
		filepath.Join(self, "outbox"), filepath.Join(self, "agent")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return "", "", err
		}
	}
	if err := os.WriteFile(filepath.Join(self, "briefing.md"), briefing, 0o644); err != nil {
		return "", "", err
	}
	if err := os.Symlink("view/schedule.json", filepath.Join(self, "schedule.json")); err != nil {
		return "", "", err
	}
	if len(s.GitConfig) > 0 {
		if err := os.WriteFile(filepath.Join(self, "gitconfig"), s.GitConfig, 0o644); err != nil {
			return "", "", err
		}
	}
	return etc, self, nil // a crash leaves it to reap or a reboot: nothing here needs to survive one
}

// sharedEtc returns the generated /etc of s's box: made once for each
// content (passwd and group with the worker's uid, hosts and hostname with
// its name, the network's resolv.conf, the host's loader cache) as
// etc-HASH under /run/roster, built beside and renamed into place, and
// bind-mounted read-only into every box whose /etc it is. Made afresh for
// each run it was ten files and folders made and removed again, with the
// loader cache copied, on the start's path: on a busy ext4 /run (as on
// this CI's hosts) 1 to 13 ms. A content no box uses any more stays until
// a reboot (some 40 KiB each).
func sharedEtc(s *Spec) (string, error) {
	files := etcFiles(s)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	sum := sha256.New()
	for _, n := range names {
		fmt.Fprintf(sum, "%s\x00%d\x00", n, len(files[n]))
		sum.Write(files[n])
	}
	dst := home.GeneratedRoot("etc-" + hex.EncodeToString(sum.Sum(nil)[:12]))
	if st, err := os.Lstat(dst); err == nil && st.IsDir() {
		return dst, nil // only ever made whole (the rename below)
	}
	if err := os.MkdirAll(home.ContainerRoot, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(home.ContainerRoot, ".etc-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(tmp, "ssl", "certs"), 0o755); err != nil { // the host's certificates' mount point
		return "", err
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(tmp, n), files[n], 0o644); err != nil {
			return "", err
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		if st, err2 := os.Lstat(dst); err2 == nil && st.IsDir() {
			return dst, nil // another supervisor made it first
		}
		return "", fmt.Errorf("generated /etc: %w", err)
	}
	return dst, nil
}

// etcFiles is the generated /etc of s's box, by file name.
func etcFiles(s *Spec) map[string][]byte {
	uid := strconv.Itoa(s.UID)
	text := map[string]string{
		"passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\n" +
			"worker:x:" + uid + ":" + uid + ":" + s.Worker + ":" + BoxHome + ":/bin/sh\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"group":         "root:x:0:\nworker:x:" + uid + ":\nnogroup:x:65534:\n",
		"hosts":         "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t" + hostname(s) + "\n",
		"hostname":      hostname(s) + "\n",
		"nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n",
		"resolv.conf":   resolvConf(s),
	}
	files := make(map[string][]byte, len(text)+1)
	for n, t := range text {
		files[n] = []byte(t)
	}
	// The dynamic loader's cache: not secret, and without it every program
	// in the box searches the library folders.
	if data, err := os.ReadFile("/etc/ld.so.cache"); err == nil && s.Rootfs == "" {
		files["ld.so.cache"] = data
	}
	return files
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
