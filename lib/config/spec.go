package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// Worker is one worker spec, workers/NAME.toml, with defaults filled in.
type Worker struct {
	Name, Role  string
	Command     []string
	Heartbeat   time.Duration // 0 = "off"
	UID         int           // the box user; gid is the same number
	Concurrency int
	Rootfs      string // "" = the host's /usr under a generated root
	Network     string // "gateway" (the default), "none" or "host"
	PassEnv     []string
	Agent       string   // "pi", "claude" or "" (run Command)
	Model       string   // the agent's model; "" = the agent's default
	AgentArgs   []string // appended to the agent's command line
	Gateway     struct {
		Providers []string // model routes this worker may use (default: its agent's provider)
		Allow     []string // CONNECT / http targets (ValidGrant)
		Inflight  int      // model calls of one run at once (0: the gateway's default, 8)
	}
	Memory      int64   // bytes
	HostMemory  int64   // host_memory: the supervisor's own cgroup bound, bytes
	HostCPUs    float64 // host_cpus: the supervisor's (and its gateway's) CPU bound, cores
	Pids        int64
	CPUs        float64
	Idle        time.Duration // 0 = "off"
	Paused      bool
	PausedSince time.Time // when roster worker pause set it (its "# since" comment); zero if unknown
	Connections []Connection
	Repos       []Repo    // [[repo]] grants (repos.go)
	Channels    []Channel // [[channel]]: the chats it serves (chat.go)
	Warnings    []string

	File string // the spec's path
}

// Connection is an extra host folder granted to the worker's boxes.
type Connection struct {
	Name string // names it in `roster connection ls`
	Path string // absolute host path
	At   string // mounted at $HOME/<At> in the box
	Mode string // "ro" or "rw"
}

// Worker defaults (docs/layout.md, "workers/NAME.toml").
const (
	DefaultHeartbeat   = "30m"
	DefaultConcurrency = 1
	DefaultNetwork     = "gateway"
	DefaultMemory      = "2G"
	DefaultHostMemory  = "512M"
	DefaultHostCPUs    = 0.5
	DefaultPids        = 512
	DefaultCPUs        = 1.0
	DefaultIdle        = Off
)

type workerFile struct {
	Role        string   `toml:"role"`
	Command     []string `toml:"command"`
	Heartbeat   string   `toml:"heartbeat"`
	UID         int64    `toml:"uid"`
	Concurrency int      `toml:"concurrency"`
	Rootfs      string   `toml:"rootfs"`
	Network     string   `toml:"network"`
	PassEnv     []string `toml:"pass_env"`
	Memory      any      `toml:"memory"`
	HostMemory  any      `toml:"host_memory"`
	HostCPUs    float64  `toml:"host_cpus"`
	Pids        int64    `toml:"pids"`
	CPUs        float64  `toml:"cpus"`
	Idle        string   `toml:"idle"`
	Paused      bool     `toml:"paused"`
	Agent       string   `toml:"agent"`
	Model       string   `toml:"model"`
	AgentArgs   []string `toml:"agent_args"`
	Gateway     struct {
		Providers *[]string `toml:"providers"`
		Allow     []string  `toml:"allow"`
		Inflight  int       `toml:"inflight"`
	} `toml:"gateway"`
	Connection []struct {
		Name string `toml:"name"`
		Path string `toml:"path"`
		At   string `toml:"at"`
		Mode string `toml:"mode"`
	} `toml:"connection"`
	Repo    []repoFile    `toml:"repo"`
	Channel []channelFile `toml:"channel"`
}

// LoadWorker reads workers/NAME.toml. An invalid name is exit 2, a missing
// spec exit 10 (no such worker), a spec that cannot be used exit 14.
func LoadWorker(h home.Home, name string) (*Worker, error) {
	w, err := ReadWorker(h, name)
	if err != nil {
		return nil, err
	}
	if other := uidSharedWith(h, name, w.UID); other != "" {
		return nil, SharedUID(h, name, w.UID, other)
	}
	return w, nil
}

// ReadWorker is LoadWorker without the check that no other worker has the
// same uid: for a caller that makes that check itself across many workers
// at once (LoadWorkers, the dispatcher's spec cache), where LoadWorker's,
// which reads every other spec, would make n loads cost n² reads.
func ReadWorker(h home.Home, name string) (*Worker, error) {
	_, w, err := readWorker(h, name)
	return w, err
}

// readWorker reads and parses name's spec; data is what was read (nil when
// nothing could be).
func readWorker(h home.Home, name string) ([]byte, *Worker, error) {
	if err := home.ValidWorker(name); err != nil {
		return nil, nil, err
	}
	file := h.SpecFile(name)
	specReads.Add(1)
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, errs.WithHint(
			errs.New(errs.ErrNoHome, fmt.Sprintf("worker %q: no such worker (no %s)", name, file)),
			h.WorkerHint(name))
	}
	if err != nil {
		return nil, nil, errs.New(errs.ErrRefused, fmt.Sprintf("%s: cannot read: %v", file, unwrapPath(err)))
	}
	w, err := ParseWorker(name, file, data)
	if err != nil {
		return data, nil, err
	}
	if w.Paused {
		w.PausedSince = PausedSince(data)
	}
	for _, c := range w.Connections {
		if c.Mode == "rw" && !writableBy(c.Path, w.UID) {
			w.Warnings = append(w.Warnings, fmt.Sprintf(
				"worker %s: connection %q is rw but %s is not writable by its uid %d: its writes there will fail", name, c.Name, c.Path, w.UID))
		}
	}
	return data, w, nil
}

// ReadWorkerUID is ReadWorker that also says the uid the spec names, read
// leniently when the spec does not parse (hasUID false when it names none
// or cannot be read): what a caller checking uids across workers needs,
// from one read of the file.
func ReadWorkerUID(h home.Home, name string) (w *Worker, uid int, hasUID bool, err error) {
	data, w, err := readWorker(h, name)
	if w != nil {
		return w, w.UID, true, nil
	}
	uid, hasUID = SpecUID(data)
	return nil, uid, hasUID, err
}

// writableBy tells whether uid (whose group is the same number, as every
// box user's) may write into folder path by its mode bits (ACLs are not
// read). A missing path is the hold's business (tms.SpecHold), not this.
func writableBy(path string, uid int) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return true
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	m := fi.Mode().Perm()
	switch {
	case int(st.Uid) == uid:
		return m&0o300 == 0o300
	case int(st.Gid) == uid:
		return m&0o030 == 0o030
	}
	return m&0o003 == 0o003
}

// connAtRE is a connection's mount point: one plain name under $HOME.
var connAtRE = lazyRegexp(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

// reservedAt are the names under $HOME that roster mounts itself.
var reservedAt = map[string]bool{"store": true, "self": true, "channel": true}

// ParseWorker parses the text of worker name's spec; file names it in errors.
// The checks run in a fixed order, so a spec with several faults always
// names the same first one.
func ParseWorker(name, file string, data []byte) (*Worker, error) {
	f := workerFile{Heartbeat: DefaultHeartbeat, Concurrency: DefaultConcurrency, Network: DefaultNetwork,
		Memory: DefaultMemory, HostMemory: DefaultHostMemory, HostCPUs: DefaultHostCPUs, Pids: DefaultPids, CPUs: DefaultCPUs, Idle: DefaultIdle}
	if err := decodeStrict(data, &f); err != nil {
		return nil, decodeError(file, err)
	}
	lines := keyLines(data)
	sp := &specParse{f: &f, name: name, file: file, lines: lines,
		w: &Worker{Name: name, Role: f.Role, Rootfs: f.Rootfs, Network: f.Network,
			Concurrency: f.Concurrency, Pids: f.Pids, CPUs: f.CPUs, Paused: f.Paused, File: file}}
	for _, step := range []func() error{sp.command, sp.gateway, sp.identity, sp.network, sp.limits, sp.connections, sp.repos, sp.channels} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return sp.w, nil
}

// specParse is one worker spec being checked, key by key.
type specParse struct {
	f          *workerFile
	w          *Worker
	name, file string
	lines      map[string]int
}

func (sp *specParse) bad(key, msg string) error { return specError(sp.file, sp.lines[key], key, msg) }

// tableLine is the line of key in the i-th [[table]] of the spec, or of
// the table's header when the key is not written (a missing one).
func (sp *specParse) tableLine(table string, i int, key string) int {
	if line := sp.lines[fmt.Sprintf("%s[%d].%s", table, i, key)]; line != 0 {
		return line
	}
	return sp.lines[fmt.Sprintf("%s[%d]", table, i)]
}

func (sp *specParse) warn(format string, a ...any) {
	sp.w.Warnings = append(sp.w.Warnings, fmt.Sprintf(format, a...))
}

// command checks what a run starts: command, or agent, model and agent_args.
func (sp *specParse) command() error {
	f, w, bad := sp.f, sp.w, sp.bad
	for i, a := range f.Command {
		if a == "" || strings.IndexByte(a, 0) >= 0 {
			return bad("command", fmt.Sprintf("word %d is empty or holds a NUL byte", i+1))
		}
	}
	w.Command = append([]string{}, f.Command...)
	switch f.Agent {
	case "", "pi", "claude":
	default:
		return bad("agent", fmt.Sprintf("%q must be \"pi\", \"claude\" or \"\" (run command)", f.Agent))
	}
	if f.Agent != "" && len(f.Command) > 0 {
		return usageSpecError(sp.file, "agent and command exclude each other: an agent worker runs its agent (add agent_args for extra arguments); remove one of them")
	}
	if f.Agent == "" && (f.Model != "" || len(f.AgentArgs) > 0) {
		return bad("model", "model and agent_args are for an agent worker (set agent = \"pi\" or \"claude\")")
	}
	for i, a := range f.AgentArgs {
		if strings.IndexByte(a, 0) >= 0 {
			return bad("agent_args", fmt.Sprintf("word %d holds a NUL byte", i+1))
		}
	}
	if strings.ContainsAny(f.Model, "\x00\n") {
		return bad("model", "holds a NUL byte or a newline")
	}
	w.Agent, w.Model = f.Agent, f.Model
	if len(f.AgentArgs) > 0 {
		w.AgentArgs = append([]string{}, f.AgentArgs...)
	}
	return nil
}

// gateway checks [gateway]: providers (default: the agent's) and allow.
func (sp *specParse) gateway() error {
	f, w, bad := sp.f, sp.w, sp.bad
	if f.Gateway.Providers != nil {
		if len(*f.Gateway.Providers) > 0 {
			w.Gateway.Providers = append([]string{}, (*f.Gateway.Providers)...)
		}
	} else if p := AgentProvider(f.Agent, f.Model); p != "" {
		w.Gateway.Providers = []string{p}
	}
	for _, p := range w.Gateway.Providers {
		if !providerNameRE().MatchString(p) {
			return bad("gateway.providers", fmt.Sprintf("%q is not a provider name", p))
		}
	}
	for _, g := range f.Gateway.Allow {
		if err := ValidGrant(g); err != nil {
			return bad("gateway.allow", err.Error())
		}
	}
	if len(f.Gateway.Allow) > 0 {
		w.Gateway.Allow = append([]string{}, f.Gateway.Allow...)
	}
	if f.Gateway.Inflight < 0 || f.Gateway.Inflight > 256 {
		return bad("gateway.inflight", fmt.Sprintf("%d: model calls of one run at once, 1 to 256 (default 8)", f.Gateway.Inflight))
	}
	w.Gateway.Inflight = f.Gateway.Inflight
	if len(w.Command) == 0 && w.Agent == "" {
		sp.warn("worker %s: no command in %s: dispatch holds its tasks until one is set", sp.name, sp.file)
	}
	return nil
}

// identity checks heartbeat, uid, concurrency and rootfs.
func (sp *specParse) identity() error {
	f, w, bad := sp.f, sp.w, sp.bad
	var err error
	if w.Heartbeat, err = ParseDuration(f.Heartbeat, true); err != nil {
		return bad("heartbeat", err.Error())
	}
	if _, ok := sp.lines["uid"]; !ok {
		return bad("uid", "missing: every worker needs a box user of its own (`roster worker add` picks one)")
	}
	if f.UID < 1 || f.UID > 1<<32-2 {
		return bad("uid", fmt.Sprintf("%d is not a usable box user (1 to 4294967294; never 0, root)", f.UID))
	}
	w.UID = int(f.UID)
	if f.Concurrency < 1 {
		return bad("concurrency", "must be 1 or more")
	}
	if f.Rootfs != "" && !filepath.IsAbs(f.Rootfs) {
		return bad("rootfs", fmt.Sprintf("%q must be \"\" or an absolute path", f.Rootfs))
	}
	return nil
}

// network checks network and pass_env: a gateway box never gets a model
// key; a host-network box may, warned.
func (sp *specParse) network() error {
	f, w, bad := sp.f, sp.w, sp.bad
	switch f.Network {
	case "gateway", "none":
	case "host":
		sp.warn("worker %s: network = \"host\": its boxes reach host-local services", sp.name)
	default:
		return bad("network", fmt.Sprintf("%q must be \"gateway\", \"none\" or \"host\"", f.Network))
	}
	if f.Network != "gateway" && (len(f.Gateway.Allow) > 0 || f.Gateway.Providers != nil && len(*f.Gateway.Providers) > 0) {
		sp.warn("worker %s: network = %q: its [gateway] grants are unused (only a gateway box has a gateway)", sp.name, f.Network)
	}
	for _, e := range f.PassEnv {
		if !envNameRE().MatchString(e) {
			return bad("pass_env", fmt.Sprintf("%q is not an environment variable name", e))
		}
	}
	w.PassEnv = append([]string{}, f.PassEnv...)
	for _, e := range f.PassEnv {
		switch {
		case !isKeyVariable(e):
		case f.Network == "gateway":
			return usageSpecError(sp.file, fmt.Sprintf("pass_env: %s is a model key: a gateway box never holds one (the gateway injects it; put the key in the vault with `roster key put PROVIDER`)", e))
		case f.Network == "host":
			sp.warn("worker %s: pass_env hands the model key %s into a host-network box: the box holds the key itself (a gateway box never does)", sp.name, e)
		}
	}
	return nil
}

// limits checks memory, pids, cpus and idle.
func (sp *specParse) limits() error {
	f, w, bad := sp.f, sp.w, sp.bad
	var err error
	if w.Memory, err = sizeValue(f.Memory); err != nil {
		return bad("memory", err.Error())
	}
	if w.Memory < 1<<20 {
		return bad("memory", "must be at least 1M")
	}
	if w.HostMemory, err = sizeValue(f.HostMemory); err != nil {
		return bad("host_memory", err.Error())
	}
	if w.HostMemory < 32<<20 {
		return bad("host_memory", "must be at least 32M (the supervisor itself needs some)")
	}
	if !(f.HostCPUs >= 0.01) || f.HostCPUs > 1<<16 {
		return bad("host_cpus", "must be a number of cores, 0.01 or more (default 0.5)")
	}
	w.HostCPUs = f.HostCPUs
	if f.Pids < 1 {
		return bad("pids", "must be 1 or more")
	}
	if !(f.CPUs > 0) || f.CPUs > 1<<16 {
		return bad("cpus", "must be a number of cores above 0")
	}
	if w.Idle, err = ParseDuration(f.Idle, true); err != nil {
		return bad("idle", err.Error())
	}
	return nil
}

// connections checks each [[connection]]: unique names and mount points,
// absolute host paths, ro or rw (warned).
func (sp *specParse) connections() error {
	names := map[string]bool{}
	ats := map[string]bool{}
	for i, c := range sp.f.Connection {
		cbad := func(k, msg string) error {
			return specError(sp.file, sp.tableLine("connection", i, k), "connection."+k, msg)
		}
		if err := home.ValidWorker(c.Name); err != nil {
			return cbad("name", fmt.Sprintf("%q is not a connection name (a lower-case letter, then up to 62 of a-z 0-9 _ -)", c.Name))
		}
		if names[c.Name] {
			return cbad("name", fmt.Sprintf("%q is given twice", c.Name))
		}
		names[c.Name] = true
		if !filepath.IsAbs(c.Path) || strings.IndexByte(c.Path, 0) >= 0 {
			return cbad("path", fmt.Sprintf("%q must be an absolute host path", c.Path))
		}
		if !connAtRE().MatchString(c.At) || c.At == ".." || reservedAt[c.At] {
			return cbad("at", fmt.Sprintf("%q must be one plain name under $HOME (not store, self or channel, no / or leading .)", c.At))
		}
		if ats[c.At] {
			return cbad("at", fmt.Sprintf("%q is used by two connections", c.At))
		}
		ats[c.At] = true
		switch c.Mode {
		case "ro":
		case "rw":
			sp.warn("worker %s: connection %q is rw: no snapshots, no undo", sp.name, c.Name)
		default:
			return cbad("mode", fmt.Sprintf("%q must be \"ro\" or \"rw\"", c.Mode))
		}
		sp.w.Connections = append(sp.w.Connections, Connection{Name: c.Name, Path: filepath.Clean(c.Path), At: c.At, Mode: c.Mode})
	}
	return nil
}
