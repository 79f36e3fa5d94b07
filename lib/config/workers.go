package config

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/runs"
)

// FirstUID is where `worker add` starts looking for a free box uid.
const FirstUID = 200000

// The system's account databases: a box uid (and gid, the same number) is
// never one of theirs. Variables so tests can point them elsewhere.
var (
	PasswdFile = "/etc/passwd"
	GroupFile  = "/etc/group"
)

// addLockWait bounds how long `worker add` waits for another one.
const addLockWait = 30 * time.Second

// AddWorker creates worker n.Name: a box uid of its own (n.UID, or the
// lowest free one from FirstUID), its folders in the data tree, then its
// spec workers/NAME.toml, created atomically and never over an existing one
// (the spec's existence is the worker's existence, so it comes last). An
// existing worker is a conflict (exit 13). Concurrent adds are serialized by
// a flock on data/workers/.
func AddWorker(ctx context.Context, h home.Home, n NewWorker) (*Worker, error) {
	if err := home.ValidWorker(n.Name); err != nil {
		return nil, err
	}
	if err := n.check(); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(h.SpecFile(n.Name)); err == nil {
		return nil, existsError(h, n.Name)
	}
	if err := fsx.MkdirDurable(h.DataWorkers(), 0o700); err != nil {
		return nil, fmt.Errorf("add worker %s: %w", n.Name, err)
	}
	lock, err := os.Open(h.DataWorkers())
	if err != nil {
		return nil, fmt.Errorf("add worker %s: %w", n.Name, err)
	}
	defer lock.Close()
	if err := fsx.Flock(ctx, lock, false, addLockWait); err != nil {
		return nil, fmt.Errorf("add worker %s: another `worker add` holds %s: %w", n.Name, h.DataWorkers(), err)
	}
	if _, err := os.Lstat(h.SpecFile(n.Name)); err == nil {
		return nil, existsError(h, n.Name)
	}
	used, err := usedUIDs(h, n.Name)
	if err != nil {
		return nil, err
	}
	if n.UID != 0 {
		if n.UID < 1 || n.UID > 1<<32-2 {
			return nil, errs.New(errs.ErrUsage, fmt.Sprintf("uid %d: not a usable box user (1 to 4294967294; never 0, root)", n.UID))
		}
		if who, ok := used[n.UID]; ok {
			return nil, errs.New(errs.ErrConflict, fmt.Sprintf("uid %d is already %s's", n.UID, who))
		}
	} else {
		n.UID = pickUID(used, h.Worker(n.Name).StoreOwner())
	}
	data, err := RenderWorker(n)
	if err != nil {
		return nil, err
	}
	if err := h.Worker(n.Name).CreateFolders(n.UID); err != nil {
		return nil, err
	}
	if err := fsx.MkdirDurable(h.WorkersDir(), 0o755); err != nil {
		return nil, err
	}
	if err := fsx.WriteNew(h.SpecFile(n.Name), data, 0o644); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, existsError(h, n.Name)
		}
		return nil, err
	}
	return ParseWorker(n.Name, h.SpecFile(n.Name), data)
}

// check refuses settings of a new worker that its spec would not take
// (exit 2, naming the `worker add` flag).
func (n NewWorker) check() error {
	usage := func(format string, args ...any) error { return errs.New(errs.ErrUsage, fmt.Sprintf(format, args...)) }
	for _, a := range n.Command {
		if a == "" || strings.IndexByte(a, 0) >= 0 {
			return usage("--command: a word is empty or holds a NUL byte")
		}
	}
	if n.Heartbeat != "" {
		if _, err := ParseDuration(n.Heartbeat, true); err != nil {
			return usage("--heartbeat: %v", err)
		}
	}
	if n.Concurrency < 0 {
		return usage("--concurrency: must be 1 or more")
	}
	if n.Network != "" && n.Network != "none" && n.Network != "host" {
		return usage("--network: %q must be \"none\" or \"host\"", n.Network)
	}
	return nil
}

func existsError(h home.Home, name string) error {
	return errs.WithHint(errs.New(errs.ErrConflict, fmt.Sprintf("worker %q already exists (%s)", name, h.SpecFile(name))),
		"edit its spec to change it; `roster worker rm "+name+"` removes it")
}

// pickUID returns prefer (the owner of a kept store of the same worker) when
// it is free, else the lowest free uid from FirstUID.
func pickUID(used map[int]string, prefer int) int {
	if prefer >= FirstUID {
		if _, taken := used[prefer]; !taken {
			return prefer
		}
	}
	uid := FirstUID
	for {
		if _, taken := used[uid]; !taken {
			return uid
		}
		uid++
	}
}

// uidLineRE finds the uid of a spec that does not parse, so that a broken
// spec never loses its uid to a new worker.
var uidLineRE = lazyRegexp(`(?m)^[ \t]*uid[ \t]*=[ \t]*([0-9]+)`)

// usedUIDs maps every uid a new worker must not take to who has it: the
// other workers' specs (parsed or not), the owners of other workers' kept
// stores, and every user and group of the system.
func usedUIDs(h home.Home, except string) (map[int]string, error) {
	used := map[int]string{0: "root"}
	for file, what := range map[string]string{PasswdFile: "user", GroupFile: "group"} {
		if err := readIDs(file, what, used); err != nil {
			return nil, err
		}
	}
	names, err := ListWorkers(h)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		if name == except {
			continue
		}
		data, err := os.ReadFile(h.SpecFile(name))
		if err != nil {
			continue
		}
		if w, err := ParseWorker(name, h.SpecFile(name), data); err == nil {
			used[w.UID] = "worker " + name
		} else if m := uidLineRE().FindSubmatch(data); m != nil {
			if uid, err := strconv.Atoi(string(m[1])); err == nil {
				used[uid] = "worker " + name
			}
		}
	}
	ents, _ := os.ReadDir(h.DataWorkers())
	for _, e := range ents {
		if e.Name() == except || home.IsTrash(e.Name()) {
			continue
		}
		if uid := h.Worker(e.Name()).StoreOwner(); uid > 0 {
			if _, ok := used[uid]; !ok {
				used[uid] = "the kept store of removed worker " + e.Name()
			}
		}
	}
	return used, nil
}

// readIDs adds the numeric ids (third field) of a passwd or group file.
func readIDs(file, what string, used map[int]string) error {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", file, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.SplitN(sc.Text(), ":", 4)
		if len(fields) < 3 {
			continue
		}
		if id, err := strconv.Atoi(fields[2]); err == nil {
			if _, ok := used[id]; !ok {
				used[id] = what + " " + fields[0] + " of " + file
			}
		}
	}
	return sc.Err()
}

// RemoveWorker removes worker name: its spec, and with purge its folder in
// the data tree (renamed to a trash name first, so a crash never leaves a
// half-deleted folder under the worker's name). Without purge the folder is
// kept: its store, snapshots, journal and runs stay for a later `worker add`
// of the same name. A worker with a live box is a conflict (exit 13). A spec
// that does not parse can still be removed.
func RemoveWorker(h home.Home, name string, purge bool) error {
	if err := home.ValidWorker(name); err != nil {
		return err
	}
	if _, err := os.Lstat(h.SpecFile(name)); errors.Is(err, fs.ErrNotExist) {
		return errs.WithHint(
			errs.New(errs.ErrNoHome, fmt.Sprintf("worker %q: no such worker (no %s)", name, h.SpecFile(name))),
			h.WorkerHint(name))
	}
	live, err := runs.LiveBoxesStrict(h.Worker(name))
	if err != nil {
		return fmt.Errorf("worker %s: %w", name, err)
	}
	if len(live) > 0 {
		return errs.WithHint(errs.New(errs.ErrConflict, fmt.Sprintf("worker %q has %d live box(es) (run %s)", name, len(live), live[0].Run)),
			"pause it (`roster worker pause "+name+"`) and wait for its boxes to end, then remove it")
	}
	if err := os.Remove(h.SpecFile(name)); err != nil {
		return fmt.Errorf("remove worker %s: %w", name, err)
	}
	if err := fsx.SyncDir(h.WorkersDir()); err != nil {
		return err
	}
	if !purge {
		return nil
	}
	dir := h.Worker(name).Dir
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	trash := h.Trash(name, strconv.FormatInt(time.Now().UnixNano(), 36))
	if err := os.Rename(dir, trash); err != nil {
		return fmt.Errorf("purge worker %s: %w", name, err)
	}
	if err := fsx.SyncDir(h.DataWorkers()); err != nil {
		return err
	}
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("purge worker %s: its folder is at %s, delete it by hand: %w", name, trash, err)
	}
	return nil
}
