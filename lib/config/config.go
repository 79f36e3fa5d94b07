// Package config reads the settings people write: org.toml and the worker
// specs workers/NAME.toml (docs/layout.md).
//
// Both are parsed strictly: an unknown key, a value of the wrong type or an
// invalid value is refused (errs.ErrRefused, exit 14) with an error that
// names the file, the line and the key, so that a typo never falls back to a
// default silently. A missing org.toml means every default; a missing
// worker spec means there is no such worker (errs.ErrNoHome, exit 10).
// Settings that are allowed but dangerous come back as Warnings, for each
// program to print once when it loads them.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// Org is org.toml with every default filled in.
type Org struct {
	Storage struct {
		Snapshots int   // store.snapshots: complete snapshots kept per worker; 0 disables snapshots
		MinFree   int64 // store.min_free, bytes
		RunsKeep  int   // runs.keep: run folders kept per worker
	}
	Dispatch struct {
		Cap         int            // boxes at once, all workers together
		Poll        time.Duration  // longest sleep between ticks
		Credentials []string       // "file:PATH" or "env:NAME"; empty = never hold
		Zone        *time.Location // zone: the host zone; nil = the system zone (use Org.Zone)
		// RetryBackoff: the waits before each automatic retry of a failed
		// run (--retries), the last repeating.
		RetryBackoff []time.Duration
	}
	Notify struct {
		OnFailure []string // a host command (argv) run once per failed run; empty = none
	}
	Ceilings struct {
		Filed, Recurring, Heartbeat, Relay, Continuation, Adhoc time.Duration
	}
	Budget struct {
		Proactive time.Duration // box time per worker per local day for proactive work
		Unlimited bool          // proactive = "off"
		Tokens    int64         // proactive_tokens: input+output tokens per worker per local day; 0 = no limit
		USD       float64       // proactive_usd: priced spend per worker per local day; 0 = no limit
	}
	Gateway struct {
		Providers map[string]Provider // the built-ins with org.toml's [gateway.NAME] over them
		Prices    map[string]Price    // [gateway.prices], by model
	}
	Warnings []string
}

// Defaults (docs/layout.md, "org.toml").
const (
	DefaultSnapshots = 14
	DefaultMinFree   = "1GiB"
	DefaultRunsKeep  = 1000
	DefaultCap       = 3
	DefaultPoll      = "2s"
	DefaultProactive = "2h"
)

// DefaultRetryBackoff is [dispatch] retry_backoff's default.
var DefaultRetryBackoff = []string{"1m", "5m", "30m", "2h"}

// RetryWait is the wait before the n-th automatic retry (n from 1): the
// n-th entry of retry_backoff, the last repeating.
func (o *Org) RetryWait(n int) time.Duration {
	b := o.Dispatch.RetryBackoff
	if len(b) == 0 {
		return 0
	}
	if n < 1 {
		n = 1
	}
	return b[min(n, len(b))-1]
}

// DefaultCeilings are the wall-clock limits of a run by the task's kind.
var DefaultCeilings = map[string]string{
	"filed": "30m", "recurring": "20m", "heartbeat": "20m",
	"relay": "15m", "continuation": "30m", "adhoc": "30m",
}

// Ceiling returns the wall-clock limit for a task of kind (filed, recurring,
// heartbeat, relay, continuation, adhoc); an unknown kind gets adhoc's.
func (o *Org) Ceiling(kind string) time.Duration {
	switch kind {
	case "filed":
		return o.Ceilings.Filed
	case "recurring":
		return o.Ceilings.Recurring
	case "heartbeat":
		return o.Ceilings.Heartbeat
	case "relay":
		return o.Ceilings.Relay
	case "continuation":
		return o.Ceilings.Continuation
	}
	return o.Ceilings.Adhoc
}

// orgFile is org.toml as written; the values are validated after decoding.
type orgFile struct {
	Storage struct {
		Store struct {
			Snapshots int `toml:"snapshots"`
			MinFree   any `toml:"min_free"`
		} `toml:"store"`
		Runs struct {
			Keep int `toml:"keep"`
		} `toml:"runs"`
	} `toml:"storage"`
	Dispatch struct {
		Cap         int      `toml:"cap"`
		Poll        string   `toml:"poll"`
		Credentials []string `toml:"credentials"`
		Zone        string   `toml:"zone"`
		Backoff     []string `toml:"retry_backoff"`
	} `toml:"dispatch"`
	Notify struct {
		OnFailure []string `toml:"on_failure"`
	} `toml:"notify"`
	Ceilings struct {
		Filed        string `toml:"filed"`
		Recurring    string `toml:"recurring"`
		Heartbeat    string `toml:"heartbeat"`
		Relay        string `toml:"relay"`
		Continuation string `toml:"continuation"`
		Adhoc        string `toml:"adhoc"`
	} `toml:"ceilings"`
	Budget struct {
		Proactive       string  `toml:"proactive"`
		ProactiveTokens int64   `toml:"proactive_tokens"`
		ProactiveUSD    float64 `toml:"proactive_usd"`
	} `toml:"budget"`
	Gateway map[string]any `toml:"gateway"`
}

// LoadOrg reads org.toml of h; a missing file means all defaults.
func LoadOrg(h home.Home) (*Org, error) {
	data, err := os.ReadFile(h.OrgFile())
	if errors.Is(err, fs.ErrNotExist) {
		data = nil
	} else if err != nil {
		return nil, errs.New(errs.ErrRefused, fmt.Sprintf("%s: cannot read: %v", h.OrgFile(), unwrapPath(err)))
	}
	return ParseOrg(h.OrgFile(), data)
}

// ParseOrg parses the text of an org.toml; file names it in errors.
func ParseOrg(file string, data []byte) (*Org, error) {
	var f orgFile
	f.Storage.Store.Snapshots = DefaultSnapshots
	f.Storage.Store.MinFree = DefaultMinFree
	f.Storage.Runs.Keep = DefaultRunsKeep
	f.Dispatch.Cap = DefaultCap
	f.Dispatch.Poll = DefaultPoll
	f.Dispatch.Backoff = DefaultRetryBackoff
	f.Ceilings.Filed = DefaultCeilings["filed"]
	f.Ceilings.Recurring = DefaultCeilings["recurring"]
	f.Ceilings.Heartbeat = DefaultCeilings["heartbeat"]
	f.Ceilings.Relay = DefaultCeilings["relay"]
	f.Ceilings.Continuation = DefaultCeilings["continuation"]
	f.Ceilings.Adhoc = DefaultCeilings["adhoc"]
	f.Budget.Proactive = DefaultProactive
	if err := decodeStrict(data, &f); err != nil {
		return nil, decodeError(file, err)
	}
	lines := keyLines(data)
	bad := func(key, msg string) error { return specError(file, lines[key], key, msg) }

	o := &Org{}
	var err error
	if f.Storage.Store.Snapshots < 0 {
		return nil, bad("storage.store.snapshots", "must be 0 (no snapshots) or more")
	}
	o.Storage.Snapshots = f.Storage.Store.Snapshots
	if o.Storage.MinFree, err = sizeValue(f.Storage.Store.MinFree); err != nil {
		return nil, bad("storage.store.min_free", err.Error())
	}
	if f.Storage.Runs.Keep < 1 {
		return nil, bad("storage.runs.keep", "must be 1 or more")
	}
	o.Storage.RunsKeep = f.Storage.Runs.Keep
	if f.Dispatch.Cap < 1 {
		return nil, bad("dispatch.cap", "must be 1 or more")
	}
	o.Dispatch.Cap = f.Dispatch.Cap
	if o.Dispatch.Poll, err = ParseDuration(f.Dispatch.Poll, false); err != nil {
		return nil, bad("dispatch.poll", err.Error())
	}
	for _, c := range f.Dispatch.Credentials {
		if err := validCredential(c); err != nil {
			return nil, bad("dispatch.credentials", err.Error())
		}
	}
	o.Dispatch.Credentials = append([]string{}, f.Dispatch.Credentials...)
	if o.Dispatch.Zone, err = loadZone(f.Dispatch.Zone); err != nil {
		return nil, bad("dispatch.zone", err.Error())
	}
	if len(f.Dispatch.Backoff) == 0 {
		return nil, bad("dispatch.retry_backoff", "give at least one wait (\"1m\")")
	}
	for _, b := range f.Dispatch.Backoff {
		d, err := ParseDuration(b, false)
		if err != nil {
			return nil, bad("dispatch.retry_backoff", err.Error())
		}
		o.Dispatch.RetryBackoff = append(o.Dispatch.RetryBackoff, d)
	}
	if len(f.Notify.OnFailure) > 0 && f.Notify.OnFailure[0] == "" {
		return nil, bad("notify.on_failure", "the command's first word is empty")
	}
	o.Notify.OnFailure = append([]string{}, f.Notify.OnFailure...)
	for _, c := range []struct {
		key string
		s   string
		d   *time.Duration
	}{
		{"filed", f.Ceilings.Filed, &o.Ceilings.Filed},
		{"recurring", f.Ceilings.Recurring, &o.Ceilings.Recurring},
		{"heartbeat", f.Ceilings.Heartbeat, &o.Ceilings.Heartbeat},
		{"relay", f.Ceilings.Relay, &o.Ceilings.Relay},
		{"continuation", f.Ceilings.Continuation, &o.Ceilings.Continuation},
		{"adhoc", f.Ceilings.Adhoc, &o.Ceilings.Adhoc},
	} {
		if *c.d, err = ParseDuration(c.s, false); err != nil {
			return nil, bad("ceilings."+c.key, err.Error())
		}
	}
	if o.Budget.Proactive, err = ParseDuration(f.Budget.Proactive, true); err != nil {
		return nil, bad("budget.proactive", err.Error())
	}
	o.Budget.Unlimited = o.Budget.Proactive == 0
	if f.Budget.ProactiveTokens < 0 {
		return nil, bad("budget.proactive_tokens", "must be 0 (no limit) or more")
	}
	if !(f.Budget.ProactiveUSD >= 0) {
		return nil, bad("budget.proactive_usd", "must be 0 (no limit) or more")
	}
	o.Budget.Tokens, o.Budget.USD = f.Budget.ProactiveTokens, f.Budget.ProactiveUSD
	if err := parseGateway(f.Gateway, o, bad); err != nil {
		return nil, err
	}
	return o, nil
}

var envNameRE = lazyRegexp(`^[A-Za-z_][A-Za-z0-9_]*$`)

func validCredential(c string) error {
	switch {
	case strings.HasPrefix(c, "file:"):
		if !filepath.IsAbs(c[5:]) {
			return fmt.Errorf("%q: the path after file: must be absolute", c)
		}
		return nil
	case strings.HasPrefix(c, "env:"):
		if !envNameRE().MatchString(c[4:]) {
			return fmt.Errorf("%q: the name after env: is not an environment variable name", c)
		}
		return nil
	}
	return fmt.Errorf("%q: a credential is \"file:PATH\" or \"env:NAME\"", c)
}

func decodeStrict(data []byte, v any) error {
	d := toml.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

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
	}
	Memory      int64 // bytes
	Pids        int64
	CPUs        float64
	Idle        time.Duration // 0 = "off"
	Paused      bool
	Connections []Connection
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
	} `toml:"gateway"`
	Connection []struct {
		Name string `toml:"name"`
		Path string `toml:"path"`
		At   string `toml:"at"`
		Mode string `toml:"mode"`
	} `toml:"connection"`
}

// LoadWorker reads workers/NAME.toml. An invalid name is exit 2, a missing
// spec exit 10 (no such worker), a spec that cannot be used exit 14.
func LoadWorker(h home.Home, name string) (*Worker, error) {
	if err := home.ValidWorker(name); err != nil {
		return nil, err
	}
	file := h.SpecFile(name)
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errs.WithHint(
			errs.New(errs.ErrNoHome, fmt.Sprintf("worker %q: no such worker (no %s)", name, file)),
			"`roster worker ls` lists the workers; `roster worker add "+name+"` makes this one")
	}
	if err != nil {
		return nil, errs.New(errs.ErrRefused, fmt.Sprintf("%s: cannot read: %v", file, unwrapPath(err)))
	}
	return ParseWorker(name, file, data)
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
		Memory: DefaultMemory, Pids: DefaultPids, CPUs: DefaultCPUs, Idle: DefaultIdle}
	if err := decodeStrict(data, &f); err != nil {
		return nil, decodeError(file, err)
	}
	lines := keyLines(data)
	sp := &specParse{f: &f, name: name, file: file, lines: lines,
		w: &Worker{Name: name, Role: f.Role, Rootfs: f.Rootfs, Network: f.Network,
			Concurrency: f.Concurrency, Pids: f.Pids, CPUs: f.CPUs, Paused: f.Paused, File: file}}
	for _, step := range []func() error{sp.command, sp.gateway, sp.identity, sp.network, sp.limits, sp.connections} {
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
			line := sp.lines[fmt.Sprintf("connection[%d].%s", i, k)]
			if line == 0 {
				line = sp.lines[fmt.Sprintf("connection[%d]", i)]
			}
			return specError(sp.file, line, "connection."+k, msg)
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

// ListWorkers returns the names of the workers of h (workers/*.toml),
// sorted. Files whose name is not a valid worker name are not workers and
// are left out; a missing workers/ folder means no workers.
func ListWorkers(h home.Home) ([]string, error) {
	ents, err := os.ReadDir(h.WorkersDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	var names []string
	for _, e := range ents {
		n, ok := strings.CutSuffix(e.Name(), ".toml")
		if !ok || e.IsDir() || home.ValidWorker(n) != nil {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}
