package box

import (
	"time"
)

// Spec is everything a box is given (docs/dispatch-and-box.md, "What a box is
// given"), resolved by the caller from the worker spec, the org settings and
// the run. lib/box does not read configuration itself.
type Spec struct {
	Worker  string
	Run     string // run id; the container id is home.ContainerID(Run)
	Task    string // "" for an ad-hoc run
	Channel string // the channel whose store is mounted; "" = none

	UID     int      // the box user; its gid is the same number
	Command []string // what runs under the reaper
	Rootfs  string   // "" = host /usr under a generated root
	Network string   // "gateway" (loopback + the run's gateway), "none" (loopback only) or "host"
	Env     []string // extra NAME=VALUE pairs (pass_env), after the fixed ones

	Memory int64   // bytes; 0 = no limit
	Pids   int64   // 0 = no limit
	CPUs   float64 // cores; 0 = no limit

	Connections []Connection
	GitConfig   []byte // the box's git config for its [[repo]] grants, at BoxGitConfig ("" = none)
	// Knowledge is the run's access to its knowledge repo: "write" (cloned
	// at ~/knowledge on run/RUN), "read" (cloned on main, pushes refused)
	// or "" (none: no gateway, or no git on the host).
	Knowledge string
	// KnowledgeObjects tells that the knowledge repo's main is being
	// written as git objects at BoxKnowledge (with the gateway): pid 1
	// makes ~/knowledge from them.
	KnowledgeObjects bool
	knowledgeDone    chan struct{} // closed once they are written (or failed)

	// Host paths.
	Store        string            // data/workers/W/store
	Locks        string            // data/workers/W/locks
	ChannelStore string            // data/workers/W/channel-stores/CHAN, when Channel != ""
	ChannelLog   string            // data/workers/W/conversations/CHAN/log.jsonl, mounted read-only
	View         string            // data/workers/W/view
	Runs         string            // data/workers/W/runs
	RunDir       string            // data/workers/W/runs/RUN
	AgentDir     string            // runs/RUN/agent, writable at agent.BoxAgentDir; "" = not an agent run
	Tools        map[string]string // in-box name → host path of a static suite binary (roster-task, roster-lock, roster-reaper)
}

// Connection is an extra host folder granted to the box at $HOME/At.
type Connection struct {
	Name, Path, At, Mode string
}

// In-box paths (the contract with the worker).
const (
	BoxHome     = "/home/worker"
	BoxBin      = "/opt/roster/bin"
	BoxStore    = BoxHome + "/store"
	BoxLocks    = BoxStore + "/.locks"
	BoxChannel  = BoxHome + "/channel/store"
	BoxChanLog  = BoxHome + "/channel/log.jsonl"
	BoxSelf     = BoxHome + "/self"
	BoxBriefing = BoxSelf + "/briefing.md"
	BoxSchedule = BoxSelf + "/schedule.json"
	BoxOutbox   = BoxSelf + "/outbox"
	BoxPath     = BoxBin + ":/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
)

// ReaperTool is the in-box program that runs as pid 1 (`roster-reaper
// --status-fd=3 -- CMD...`): static, so it runs in any rootfs, and a
// program of its own, linked with the reaper alone, as it starts with
// every box.
const ReaperTool = "roster-reaper"

// Grace is how long a box has between SIGTERM and SIGKILL at its ceiling.
// ROSTER_BOX_GRACE (a Go duration) overrides it; it is a test knob.
var Grace = 10 * time.Second
