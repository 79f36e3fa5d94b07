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
		Daily     int   // store.daily: also the newest snapshot of each of the last N local days with one
		UndoDays  int   // store.undo_days: pre-restore snapshots kept this long; 0 = until removed by hand
		MinFree   int64 // store.min_free, bytes (and MinFree/InodeBytes free inodes)
		Max       int64 // store.max: one worker's snapshot in bytes, and inodes at one per InodeBytes; 0 = none
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
		ChatCap      int // chat_cap: live sessions and relay runs at once, beside Cap
	}
	Notify struct {
		OnFailure []string // a host command (argv) run once per failed run; empty = none
		FinalOnly bool     // on_failure_final_only: not for a failure an automatic retry follows
	}
	Ceilings struct {
		Filed, Recurring, Heartbeat, Relay, Continuation, Adhoc time.Duration
		Live                                                    time.Duration // a live session's whole life
	}
	Budget struct {
		Proactive time.Duration // box time per worker per local day for proactive work
		Unlimited bool          // proactive = "off"
		Tokens    int64         // proactive_tokens: input+output tokens per worker per local day; 0 = no limit
		USD       float64       // proactive_usd: priced spend per worker per local day; 0 = no limit
		Starts    int           // proactive_starts: proactive runs per worker per rolling hour; 0 = no limit
	}
	Gateway struct {
		Providers map[string]Provider // the built-ins with org.toml's [gateway.NAME] over them
		Prices    map[string]Price    // [gateway.prices], by model
	}
	Chat struct {
		Accounts     map[string]ChatAccount // [chat.NAME]
		BudgetNotice bool                   // budget_notice: one notice per channel per day when proactive relays wait
	}
	Warnings []string
}

// InodeBytes is what one inode (a file, a folder, a link) weighs against
// store.max and store.min_free: a bound of "20GiB" is also one of
// 5,242,880 inodes, and 1GiB free also means 262,144 free inodes.
const InodeBytes = 4 << 10

// Defaults (docs/layout.md, "org.toml").
const (
	DefaultSnapshots = 14
	DefaultDaily     = 7
	DefaultUndoDays  = 30
	DefaultMinFree   = "1GiB"
	DefaultRunsKeep  = 1000
	DefaultCap       = 3
	DefaultPoll      = "2s"
	DefaultProactive = "2h"
	// DefaultProactiveStarts paces proactive runs: per worker per rolling hour.
	DefaultProactiveStarts = 30
)

// DefaultRetryBackoff is [dispatch] retry_backoff's default.
var DefaultRetryBackoff = []string{"1m", "5m", "30m", "2h"}

// DefaultRetryWait is RetryWait under the default retry_backoff.
func DefaultRetryWait(n int) time.Duration {
	waits := []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour}
	return waits[min(max(n, 1), len(waits))-1]
}

// RetryWait is the wait before the n-th automatic retry (n from 1): the
// n-th entry of retry_backoff, the last repeating.
func (o *Org) RetryWait(n int) time.Duration {
	b := o.Dispatch.RetryBackoff
	if len(b) == 0 {
		return DefaultRetryWait(n)
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
			Daily     int `toml:"daily"`
			UndoDays  int `toml:"undo_days"`
			MinFree   any `toml:"min_free"`
			Max       any `toml:"max"`
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
		ChatCap     int      `toml:"chat_cap"`
	} `toml:"dispatch"`
	Notify struct {
		OnFailure []string `toml:"on_failure"`
		FinalOnly bool     `toml:"on_failure_final_only"`
	} `toml:"notify"`
	Ceilings struct {
		Filed        string `toml:"filed"`
		Recurring    string `toml:"recurring"`
		Heartbeat    string `toml:"heartbeat"`
		Relay        string `toml:"relay"`
		Continuation string `toml:"continuation"`
		Adhoc        string `toml:"adhoc"`
		Live         string `toml:"live"`
	} `toml:"ceilings"`
	Budget struct {
		Proactive       string  `toml:"proactive"`
		ProactiveTokens int64   `toml:"proactive_tokens"`
		ProactiveUSD    float64 `toml:"proactive_usd"`
		ProactiveStarts int     `toml:"proactive_starts"`
	} `toml:"budget"`
	Gateway map[string]any `toml:"gateway"`
	Chat    map[string]any `toml:"chat"`
}

// LoadOrg reads org.toml of h; a missing file means all defaults.
func LoadOrg(h home.Home) (*Org, error) {
	orgReads.Add(1)
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
	f := defaultOrgFile()
	if err := decodeStrict(data, f); err != nil {
		return nil, decodeError(file, err)
	}
	lines := keyLines(data)
	bad := func(key, msg string) error { return specError(file, lines[key], key, msg) }

	// The sections in a fixed order, so an org.toml with several faults
	// always names the same first one.
	o := &Org{}
	for _, parse := range []func(*orgFile, *Org, func(key, msg string) error) error{
		parseStorage, parseDispatch, parseNotify, parseCeilings, parseBudget,
	} {
		if err := parse(f, o, bad); err != nil {
			return nil, err
		}
	}
	if err := parseGateway(f.Gateway, o, bad); err != nil {
		return nil, err
	}
	if err := parseChat(f.Chat, o, bad); err != nil {
		return nil, err
	}
	return o, nil
}

// defaultOrgFile is an org.toml that sets every default, for the file's
// text to decode over.
func defaultOrgFile() *orgFile {
	var f orgFile
	f.Storage.Store.Snapshots = DefaultSnapshots
	f.Storage.Store.Daily = DefaultDaily
	f.Storage.Store.UndoDays = DefaultUndoDays
	f.Storage.Store.MinFree = DefaultMinFree
	f.Storage.Store.Max = ""
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
	f.Ceilings.Live = DefaultLiveCeiling
	f.Dispatch.ChatCap = DefaultChatCap
	f.Budget.Proactive = DefaultProactive
	f.Budget.ProactiveStarts = DefaultProactiveStarts
	return &f
}

// parseStorage checks and sets [storage]: the snapshots kept, the free
// space and size bounds, the run folders kept.
func parseStorage(f *orgFile, o *Org, bad func(key, msg string) error) error {
	var err error
	if f.Storage.Store.Snapshots < 0 {
		return bad("storage.store.snapshots", "must be 0 (no snapshots) or more")
	}
	o.Storage.Snapshots = f.Storage.Store.Snapshots
	if f.Storage.Store.Daily < 0 {
		return bad("storage.store.daily", "must be 0 (no daily snapshots kept) or more")
	}
	o.Storage.Daily = f.Storage.Store.Daily
	if f.Storage.Store.UndoDays < 0 {
		return bad("storage.store.undo_days", "must be 0 (keep until removed by hand) or more")
	}
	o.Storage.UndoDays = f.Storage.Store.UndoDays
	if o.Storage.MinFree, err = sizeValue(f.Storage.Store.MinFree); err != nil {
		return bad("storage.store.min_free", err.Error())
	}
	if m, ok := f.Storage.Store.Max.(string); !ok || strings.TrimSpace(m) != "" {
		if o.Storage.Max, err = sizeValue(f.Storage.Store.Max); err != nil {
			return bad("storage.store.max", err.Error())
		}
		if o.Storage.Max != 0 && o.Storage.Max < InodeBytes {
			return bad("storage.store.max", fmt.Sprintf("must be \"\" (no bound) or at least %s", FormatSize(InodeBytes)))
		}
	}
	if f.Storage.Runs.Keep < 1 {
		return bad("storage.runs.keep", "must be 1 or more")
	}
	o.Storage.RunsKeep = f.Storage.Runs.Keep
	return nil
}

// parseDispatch checks and sets [dispatch]: the caps, the poll, the
// credentials, the zone, the retry backoff.
func parseDispatch(f *orgFile, o *Org, bad func(key, msg string) error) error {
	var err error
	if f.Dispatch.Cap < 1 {
		return bad("dispatch.cap", "must be 1 or more")
	}
	o.Dispatch.Cap = f.Dispatch.Cap
	if f.Dispatch.ChatCap < 1 {
		return bad("dispatch.chat_cap", "must be 1 or more (live sessions and relay runs at once, beside cap)")
	}
	o.Dispatch.ChatCap = f.Dispatch.ChatCap
	if o.Dispatch.Poll, err = ParseDuration(f.Dispatch.Poll, false); err != nil {
		return bad("dispatch.poll", err.Error())
	}
	for _, c := range f.Dispatch.Credentials {
		if err := validCredential(c); err != nil {
			return bad("dispatch.credentials", err.Error())
		}
	}
	o.Dispatch.Credentials = append([]string{}, f.Dispatch.Credentials...)
	if o.Dispatch.Zone, err = loadZone(f.Dispatch.Zone); err != nil {
		return bad("dispatch.zone", err.Error())
	}
	if len(f.Dispatch.Backoff) == 0 {
		return bad("dispatch.retry_backoff", "give at least one wait (\"1m\")")
	}
	for _, b := range f.Dispatch.Backoff {
		d, err := ParseDuration(b, false)
		if err != nil {
			return bad("dispatch.retry_backoff", err.Error())
		}
		o.Dispatch.RetryBackoff = append(o.Dispatch.RetryBackoff, d)
	}
	return nil
}

// parseNotify checks and sets [notify]: the failure hook.
func parseNotify(f *orgFile, o *Org, bad func(key, msg string) error) error {
	if len(f.Notify.OnFailure) > 0 && f.Notify.OnFailure[0] == "" {
		return bad("notify.on_failure", "the command's first word is empty")
	}
	o.Notify.OnFailure = append([]string{}, f.Notify.OnFailure...)
	o.Notify.FinalOnly = f.Notify.FinalOnly
	return nil
}

// parseCeilings checks and sets [ceilings]: each kind of run's wall-clock
// limit.
func parseCeilings(f *orgFile, o *Org, bad func(key, msg string) error) error {
	var err error
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
		{"live", f.Ceilings.Live, &o.Ceilings.Live},
	} {
		if *c.d, err = ParseDuration(c.s, false); err != nil {
			return bad("ceilings."+c.key, err.Error())
		}
	}
	return nil
}

// parseBudget checks and sets [budget]: the proactive runs' daily time,
// tokens, dollars and starts.
func parseBudget(f *orgFile, o *Org, bad func(key, msg string) error) error {
	var err error
	if o.Budget.Proactive, err = ParseDuration(f.Budget.Proactive, true); err != nil {
		return bad("budget.proactive", err.Error())
	}
	o.Budget.Unlimited = o.Budget.Proactive == 0
	if f.Budget.ProactiveTokens < 0 {
		return bad("budget.proactive_tokens", "must be 0 (no limit) or more")
	}
	if !(f.Budget.ProactiveUSD >= 0) {
		return bad("budget.proactive_usd", "must be 0 (no limit) or more")
	}
	o.Budget.Tokens, o.Budget.USD = f.Budget.ProactiveTokens, f.Budget.ProactiveUSD
	if f.Budget.ProactiveStarts < 0 {
		return bad("budget.proactive_starts", "must be 0 (no limit) or more")
	}
	o.Budget.Starts = f.Budget.ProactiveStarts
	return nil
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
