package config

import (
	"fmt"
	"strconv"
	"strings"
)

// DefaultOrgTOML is the org.toml `roster init` writes: every key commented
// out at its default, so the file documents itself and changes nothing.
const DefaultOrgTOML = `# org.toml: settings for the whole roster home (see roster(7)).
# Every key is optional; each is shown commented out at its default.
# An unknown key is an error that names the key and its line.

[storage]
# store.snapshots = 14        # complete snapshots kept per worker; 0 disables snapshots
# store.daily = 7             # also keep the newest snapshot of each of the last 7 local days
#                             # that have one (the host zone's days), so a burst of runs
#                             # cannot rotate away yesterday's state; 0 = none
# store.undo_days = 30        # pre-restore snapshots (a restore's undo) are kept this long
#                             # outside the rotation; 0 = until removed by hand
# store.max = ""              # per-worker store bound in bytes and inodes (one per 4 KiB), e.g.
#                             # "20GiB"; over it at a take, that worker is held; "" = none
# store.min_free = "1GiB"     # below this free space (or one free inode per 4 KiB of it) on the
#                             # data tree's filesystem, dispatch holds and snapshots are skipped
#                             # (sizes: K, M, G, T, powers of 1024)
# runs.keep = 1000            # run folders kept per worker (the daily sweep prunes older ones,
#                             # never one a pending or claimed task refers to)

[dispatch]
# cap = 3                     # boxes at once, all workers together
# poll = "2s"                 # longest sleep between dispatcher ticks (changes wake it sooner)
# credentials = []            # dispatch holds until one of these is present; [] = never hold.
#                             # "file:PATH" (exists, non-empty; re-checked every tick) or
#                             # "env:NAME" (the dispatcher's environment). Example:
#                             # credentials = ["file:/etc/roster/model-key"]
# zone = ""                   # the host zone for cron specs without CRON_TZ, host-local days
#                             # and listed times; "" = /etc/localtime (never the TZ variable)
# retry_backoff = ["1m", "5m", "30m", "2h"]   # waits before each automatic retry of a failed
#                             # run (roster-task add --retries N); the last one repeats

[notify]
# on_failure = []             # a host command run once per run attested failed or ended by its
#                             # ceiling (systemd's OnFailure=), e.g. ["/usr/local/bin/page-me"]:
#                             # a clean environment: PATH, HOME, LANG, ROSTER_HOME, ROSTER_WORKER,
#                             # ROSTER_RUN, ROSTER_TASK, ROSTER_ATTESTED, ROSTER_ENDED, ROSTER_REASON
#                             # (escaped, cut at 4 KiB), ROSTER_WILL_RETRY; stdin closed, 60 s at
#                             # most; its exit is logged and recorded in run.json
# on_failure_final_only = false   # true: not for a failure an automatic retry follows (page
#                             # only on the last attempt)

[ceilings]                    # wall-clock limit of a run, by the task's kind
# filed = "30m"
# recurring = "20m"
# heartbeat = "20m"
# relay = "15m"
# continuation = "30m"
# adhoc = "30m"               # runs started by hand (roster worker run)

[budget]
# proactive = "2h"            # box time per worker per local day for proactive work; "off" = unlimited
# proactive_tokens = 0        # input+output model tokens per worker per local day for proactive work; 0 = no limit
# proactive_usd = 0.0         # priced model spend (USD) per worker per local day for proactive work; 0 = no limit
# proactive_starts = 30       # proactive runs a worker may start in any hour; more wait, late; 0 = no limit

# The gateway: each box's one way out (roster(7), GATEWAY). It holds the model keys; a box
# gets a placeholder. Keys come from the sources in order, read fresh at every request:
# "vault" ($ROSTER_HOME/vault/PROVIDER, mode 0600: roster key put PROVIDER < keyfile),
# "pi" (the host's pi login), "env:NAME" (the dispatcher's environment), "file:PATH" (mode 0600).
# [gateway.anthropic]
# upstream = "https://api.anthropic.com"
# credentials = ["vault", "pi", "env:ANTHROPIC_API_KEY"]
# [gateway.openai]
# upstream = "https://api.openai.com"
# credentials = ["vault", "pi", "env:OPENAI_API_KEY"]
# [gateway.local]             # a provider of your own: route /local/..., its key in vault/local
# api = "openai"              # the shape of its requests: "openai" or "anthropic"
# upstream = "http://127.0.0.1:4000"
# [gateway.prices]            # USD per million tokens; a model without a price still counts tokens
# "claude-sonnet-4-5" = { input = 3.0, output = 15.0, cache_read = 0.3, cache_write = 3.75 }
`

// NewWorker is what `roster worker add` knows about a new worker; the rest
// of its spec is written commented out at the defaults.
type NewWorker struct {
	Name        string
	Role        string
	Command     []string
	Heartbeat   string // "" = the default
	UID         int
	Concurrency int    // 0 = the default
	Network     string // "" = the default
	Agent       string // "pi", "claude" or "" (Command)
	Model       string // the agent's model; "" = its default
}

// RenderWorker returns the text of a new worker spec: the settings given,
// then every other key commented out at its default with a one-line note.
// The result parses with ParseWorker (RenderWorker checks it does).
func RenderWorker(n NewWorker) ([]byte, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# workers/%s.toml: the spec of worker %s (see roster(7)).\n", n.Name, n.Name)
	b.WriteString("# The file's existence is the worker's existence; `roster worker rm` removes it.\n\n")
	line := func(set bool, key, val, note string) {
		s := key + " = " + val
		if !set {
			s = "# " + s
		}
		if note != "" {
			s = fmt.Sprintf("%-30s # %s", s, note)
		}
		b.WriteString(s + "\n")
	}
	role := n.Role
	line(role != "", "role", quote(role), "opens every briefing")
	cmd := n.Command
	if n.Agent != "" {
		line(true, "agent", quote(n.Agent), "an AI agent runs headless with the briefing as its prompt")
		line(n.Model != "", "model", quote(n.Model), "the agent's model; unset = the agent's default")
		line(false, "agent_args", "[]", "extra arguments for the agent")
	} else if len(cmd) == 0 {
		line(false, "command", `["/usr/local/bin/agent", "--briefing", "/home/worker/self/briefing.md"]`, "the program a run starts; required to run")
	} else {
		q := make([]string, len(cmd))
		for i, a := range cmd {
			q[i] = quote(a)
		}
		line(true, "command", "["+strings.Join(q, ", ")+"]", "the program a run starts")
	}
	line(n.Heartbeat != "", "heartbeat", quote(orDefault(n.Heartbeat, DefaultHeartbeat)), `the system template's period; "off" disables it`)
	line(true, "uid", strconv.Itoa(n.UID), "the box user (and group), this worker's alone")
	line(n.Concurrency != 0, "concurrency", strconv.Itoa(max(n.Concurrency, DefaultConcurrency)), "boxes of this worker at once from dispatch")
	line(false, "rootfs", `""`, `"" = the host's /usr read-only; or a root tree`)
	line(n.Network != "", "network", quote(orDefault(n.Network, DefaultNetwork)), `"gateway" (only the gateway), "none" (loopback only) or "host"`)
	line(false, "pass_env", "[]", "host environment variables handed into the box")
	line(false, "memory", quote(DefaultMemory), "cgroup memory limit (K, M, G, T: powers of 1024)")
	line(false, "host_memory", quote(DefaultHostMemory), "the supervisor's own cgroup bound (host-side work)")
	line(false, "host_cpus", "0.5", "the supervisor's and its gateway's CPU bound, in cores")
	line(false, "pids", strconv.Itoa(DefaultPids), "cgroup pids limit")
	line(false, "cpus", "1.0", "cgroup CPU quota, in cores")
	line(false, "idle", quote(DefaultIdle), "end a box silent for this long")
	line(false, "paused", "false", "`roster worker pause/resume` sets it")
	b.WriteString(`
# [gateway]                   # what a gateway box may reach (roster(7), GATEWAY)
# providers = []              # model routes it may use; default: its agent's provider
# allow = []                  # CONNECT/http targets: "github.com", "*.pypi.org", "host:port", an IP or CIDR

# [[connection]]              # an extra host folder granted to the box; repeat for more
# name = "docs"
# path = "/srv/docs"
# at = "docs"                 # mounted at $HOME/docs
# mode = "ro"                 # "rw" is allowed but warned: no snapshots, no undo
`)
	data := []byte(b.String())
	if _, err := ParseWorker(n.Name, "workers/"+n.Name+".toml", data); err != nil {
		return nil, err
	}
	return data, nil
}

// quote writes s as a TOML basic string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
