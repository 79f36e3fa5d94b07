package doctor

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// generatedGrace is how young a generated folder is kept even when no box
// mounts it: a supervisor may be between making it and mounting it.
const generatedGrace = 10 * time.Minute

// checkGenerated finds the generated /etc folders (etc-HASH, and a
// crashed build's .etc-*) under the container root that no mount
// namespace of this host uses and that are older than generatedGrace;
// with Clean it removes them. They are made once per content and used by
// every box of that content; a content no box uses stays until a reboot
// otherwise.
func checkGenerated(r *Report, o Options) {
	ents, err := os.ReadDir(o.ContainerRoot)
	if err != nil {
		return // no box ever ran here
	}
	used := mountedRoots(o.ProcRoot)
	var unused []string
	kept := 0
	for _, e := range ents {
		n := e.Name()
		if !e.IsDir() || !(strings.HasPrefix(n, "etc-") || strings.HasPrefix(n, ".etc-")) {
			continue
		}
		fi, err := e.Info()
		if err != nil || used[n] || o.Now().Sub(fi.ModTime()) < generatedGrace {
			kept++
			continue
		}
		unused = append(unused, filepath.Join(o.ContainerRoot, n))
	}
	switch {
	case len(unused) == 0:
		r.add("generated", OK, o.ContainerRoot, fmt.Sprintf("%d generated /etc folders, all in use or new", kept), "")
	case !o.Clean:
		r.add("generated", Warning, o.ContainerRoot, fmt.Sprintf("%d generated /etc folders no box uses any more (%d in use or new)", len(unused), kept),
			"roster doctor --clean removes them")
	default:
		removed := 0
		for _, p := range unused {
			if err := os.RemoveAll(p); err != nil {
				r.add("generated", Problem, p, fmt.Sprintf("cannot remove: %v", err), "")
				continue
			}
			removed++
		}
		r.add("generated", OK, o.ContainerRoot, fmt.Sprintf("removed %d generated /etc folders no box used (%d in use or new kept)", removed, kept), "")
	}
}

// mountedRoots is the set of names under the container root that some
// mount namespace of this host has mounted (a box's /etc is a bind mount
// of its etc-HASH: mountinfo's root field names it). Each namespace is
// read once.
func mountedRoots(proc string) map[string]bool {
	used := map[string]bool{}
	seen := map[string]bool{}
	pids, _ := os.ReadDir(proc)
	for _, p := range pids {
		if p.Name()[0] < '0' || p.Name()[0] > '9' {
			continue
		}
		ns, err := os.Readlink(filepath.Join(proc, p.Name(), "ns", "mnt"))
		if err != nil || seen[ns] {
			continue
		}
		seen[ns] = true
		f, err := os.Open(filepath.Join(proc, p.Name(), "mountinfo"))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 5 {
				continue
			}
			for _, part := range strings.Split(fields[3], "/") { // the mount's root in its filesystem
				if strings.HasPrefix(part, "etc-") || strings.HasPrefix(part, ".etc-") {
					used[part] = true
				}
			}
		}
		f.Close()
	}
	return used
}
