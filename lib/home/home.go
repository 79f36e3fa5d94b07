package home

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/roster-sh/roster/lib/errs"
)

// Home is a roster home: org.toml, workers/*.toml and the data/ tree.
type Home struct {
	Dir string // absolute
}

// At returns the home at dir without checking it exists (for `init`).
func At(dir string) (Home, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Home{}, fmt.Errorf("home %q: %w", dir, err)
	}
	return Home{Dir: abs}, nil
}

// Open returns the home at dir, refusing one without data/ (exit 10).
func Open(dir string) (Home, error) {
	h, err := At(dir)
	if err != nil {
		return h, err
	}
	fi, err := os.Stat(h.Data())
	if err != nil || !fi.IsDir() {
		return h, errs.WithHint(
			errs.New(errs.ErrNoHome, fmt.Sprintf("no roster home at %s (no data/ folder)", h.Dir)),
			"run `roster init` there, or point --home (ROSTER_HOME) at an existing home")
	}
	return h, nil
}

func (h Home) OrgFile() string    { return filepath.Join(h.Dir, "org.toml") }
func (h Home) WorkersDir() string { return filepath.Join(h.Dir, "workers") }
func (h Home) SpecFile(w string) string {
	return filepath.Join(h.Dir, "workers", w+".toml")
}
func (h Home) Data() string         { return filepath.Join(h.Dir, "data") }
func (h Home) DataWorkers() string  { return filepath.Join(h.Dir, "data", "workers") }
func (h Home) DispatchLock() string { return filepath.Join(h.Dir, "data", "dispatch.lock") }
func (h Home) DispatchJSON() string { return filepath.Join(h.Dir, "data", "dispatch.json") }

// ContainerRoot is libcontainer's state root, outside the data tree so that
// a reboot clears it (docs/layout.md).
const ContainerRoot = "/run/roster"

// ContainerID is the libcontainer id of a run's box.
func ContainerID(run string) string { return "roster-" + run }

// BoxScratchDir holds one scratch folder per box being run on this host
// (BoxScratch), of any home.
const BoxScratchDir = ContainerRoot + "/boxes"

// Under ContainerRoot, beside libcontainer's state: a run's scratch folder
// (its generated /etc and ~/self), its gateway folder (the socket only its
// box is given) and the shared generated root.
func ContainerDir(run string) string   { return filepath.Join(ContainerRoot, ContainerID(run)) }
func BoxScratch(run string) string     { return filepath.Join(BoxScratchDir, run) }
func GatewayDir(run string) string     { return filepath.Join(ContainerRoot, "gw", run) }
func GeneratedRoot(name string) string { return filepath.Join(ContainerRoot, name) }

// Worker returns the paths of worker name's folder. It does not check the
// name; callers validate names that come from outside with ValidWorker.
func (h Home) Worker(name string) Worker {
	return Worker{Name: name, Dir: filepath.Join(h.Dir, "data", "workers", name)}
}

// Worker is one worker's folder in the data tree.
type Worker struct {
	Name string
	Dir  string
}

// Names in a worker's folder, for code that works relative to an open
// folder handle (lib/snap, roster-lock); the paths below join them.
const (
	StoreDir         = "store"           // W/store/: the worker's store
	LocksDir         = "locks"           // W/locks/: its lock folder
	ChannelStoresDir = "channel-stores"  // W/channel-stores/<encoded>/
	SnapshotsDir     = "store-snapshots" // W/store-snapshots/: its snapshots
)

func (w Worker) Store() string           { return filepath.Join(w.Dir, StoreDir) }
func (w Worker) StoreLocksMount() string { return filepath.Join(w.Dir, StoreDir, StoreLocksName) }
func (w Worker) Locks() string           { return filepath.Join(w.Dir, LocksDir) }
func (w Worker) StoreLock() string       { return filepath.Join(w.Dir, LocksDir, StoreLockName) }
func (w Worker) ChannelStores() string   { return filepath.Join(w.Dir, ChannelStoresDir) }
func (w Worker) Snapshots() string       { return filepath.Join(w.Dir, SnapshotsDir) }
func (w Worker) Tasks() string           { return filepath.Join(w.Dir, "tasks") }
func (w Worker) TasksFile() string       { return filepath.Join(w.Dir, "tasks", "tasks.json") }
func (w Worker) Journal() string         { return filepath.Join(w.Dir, "tasks", "journal.jsonl") }
func (w Worker) TasksLock() string       { return filepath.Join(w.Dir, "tasks", ".lock") }
func (w Worker) TasksIndex() string      { return filepath.Join(w.Dir, "tasks", "index.jsonl") }
func (w Worker) TasksIndexLock() string  { return filepath.Join(w.Dir, "tasks", ".index.lock") }
func (w Worker) View() string            { return filepath.Join(w.Dir, "view") }
func (w Worker) Schedule() string        { return filepath.Join(w.Dir, "view", "schedule.json") }
func (w Worker) Runs() string            { return filepath.Join(w.Dir, "runs") }
func (w Worker) Knowledge() string       { return filepath.Join(w.Dir, "knowledge.git") }
func (w Worker) Run(id string) string    { return filepath.Join(w.Dir, "runs", id) }

// WorkerOfStore recognises real (absolute, symlinks resolved) as a
// worker's own store, HOME/data/workers/W/store, by its place alone: it
// does not look at the disk.
func WorkerOfStore(real string) (Worker, bool) {
	if filepath.Base(real) != StoreDir {
		return Worker{}, false
	}
	wdir := filepath.Dir(real)
	workers := filepath.Dir(wdir)
	data := filepath.Dir(workers)
	if filepath.Base(workers) != "workers" || filepath.Base(data) != "data" {
		return Worker{}, false
	}
	name := filepath.Base(wdir)
	if ValidWorker(name) != nil {
		return Worker{}, false
	}
	h, err := At(filepath.Dir(data))
	if err != nil {
		return Worker{}, false
	}
	return h.Worker(name), true
}

// ChannelStore is the folder of one channel's store; chan is the channel
// name (not encoded).
func (w Worker) ChannelStore(channel string) (string, error) {
	enc, err := EncodeChannel(channel)
	if err != nil {
		return "", err
	}
	return filepath.Join(w.Dir, ChannelStoresDir, enc), nil
}

// Run-folder files (docs/dispatch-and-box.md, "Run records").
func RunJSON(runDir string) string      { return filepath.Join(runDir, "run.json") }
func BoxJSON(runDir string) string      { return filepath.Join(runDir, "box.json") }
func Briefing(runDir string) string     { return filepath.Join(runDir, "briefing.md") }
func Recall(runDir string) string       { return filepath.Join(runDir, "recall.json") }
func Transcript(runDir string) string   { return filepath.Join(runDir, "transcript.log") }
func Outbox(runDir string) string       { return filepath.Join(runDir, "outbox") }
func AgentDir(runDir string) string     { return filepath.Join(runDir, "agent") }
func StoreChanges(runDir string) string { return filepath.Join(runDir, "store-changes.txt") }
