package creds

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"golang.org/x/sys/unix"
)

// Provider is a model route /NAME/... and how to reach and authenticate
// to its upstream.
type Provider struct {
	Name        string   // route: /NAME/...
	Style       string   // StyleAnthropic | StyleOpenAI: credential header, usage format, error body shape
	Upstream    string   // base URL, e.g. https://api.anthropic.com (a local http://127.0.0.1:PORT is fine)
	Credentials []string // sources tried in order at every request: "vault", "pi", "env:NAME", "file:PATH"
	KeyEnv      string   // the box's key variable that gets a placeholder
	BaseEnv     string   // the box's base URL variable
	// Paths are the "METHOD /path" pairs the route forwards (a trailing
	// "/*" covers what is under it); nil: its style's defaults
	// (config.RoutePaths).
	Paths []string
}

// Provider styles.
const (
	StyleAnthropic = "anthropic"
	StyleOpenAI    = "openai"
)

// BuiltinProviders returns anthropic and openai with the spec's defaults
// (config.BuiltinProviders, the one place they are written down);
// org.toml's [gateway.NAME] tables are merged over them by lib/config.
func BuiltinProviders() map[string]Provider {
	o := &config.Org{}
	o.Gateway.Providers = config.BuiltinProviders()
	return OrgProviders(o)
}

// Creds says where the credential sources live.
type Creds struct {
	VaultDir string                      // $ROSTER_HOME/vault
	PiDir    string                      // "" = $PI_CODING_AGENT_DIR, else ~/.pi/agent
	Env      func(string) (string, bool) // nil = os.LookupEnv (the supervisor's environment)
}

// Credential is what a source yielded. Value never leaves the gateway's
// memory: it is never logged, written or shown.
type Credential struct {
	Value  string
	OAuth  bool   // an OAuth access token (Authorization: Bearer), not an API key
	Source string // the source that yielded it: "vault", "pi", "env:NAME", "file:PATH"
}

// The ways a lookup fails; each wraps a kind of lib/errs.
var (
	ErrNoCredential      = errs.New(errs.ErrNotFound, "no credential")
	ErrCredentialExpired = errs.New(errs.ErrNotFound, "credential expired")
	ErrUnsafeMode        = errs.New(errs.ErrRefused, "credential file readable by group or others")
)

// maxKeyBytes bounds every key file read: a key is a line, not a document.
const (
	maxKeyBytes    = 64 << 10
	maxPiAuthBytes = 4 << 20
)

// Lookup tries p's sources in order and returns the first credential.
// Every call looks at the files and the environment again, so a rotated
// key is used at once and a removed one refused at once: a key file is
// read again whenever its inode, size, mode or times differ from the read
// it was last served from (fileCache), and otherwise costs one lstat.
//
// A vault or file: source whose file (or the vault folder) is open to
// group or others stops the lookup with ErrUnsafeMode: the operator meant
// that key, and silently using the next one would hide the mistake. An
// expired pi OAuth token does not stop it (a later source may serve); when
// no source serves, the error is ErrCredentialExpired if a token had
// expired, else ErrNoCredential.
func Lookup(p Provider, c Creds, now time.Time) (Credential, error) {
	expired := ""
	var tried []string
	for _, src := range p.Credentials {
		cr, err := lookupSource(p, c, src, now)
		switch {
		case err == nil:
			cr.Source = src
			return cr, nil
		case errors.Is(err, ErrCredentialExpired):
			expired = err.Error()
		case errors.Is(err, ErrNoCredential):
			tried = append(tried, src)
		default:
			return Credential{}, err
		}
	}
	if expired != "" {
		return Credential{}, errs.WithHint(fmt.Errorf("%s: %s: %w", p.Name, expired, ErrCredentialExpired),
			"run pi on the host to refresh its login (the gateway never refreshes a token itself)")
	}
	if len(p.Credentials) == 0 {
		return Credential{}, fmt.Errorf("%s: no credential sources configured: %w", p.Name, ErrNoCredential)
	}
	return Credential{}, errs.WithHint(
		fmt.Errorf("%s: no credential in %s: %w", p.Name, strings.Join(tried, ", "), ErrNoCredential),
		"roster key put "+p.Name+" <KEYFILE stores one in the vault; or log in with pi on the host")
}

// Which tells which source would serve p now, never the value.
func Which(p Provider, c Creds, now time.Time) (string, error) {
	cr, err := Lookup(p, c, now)
	return cr.Source, err
}

// lookupSource returns ErrNoCredential (wrapped) when src simply has no
// key, so that Lookup goes on to the next source.
func lookupSource(p Provider, c Creds, src string, now time.Time) (Credential, error) {
	switch {
	case src == "vault":
		if c.VaultDir == "" {
			return Credential{}, fmt.Errorf("vault: no vault folder: %w", ErrNoCredential)
		}
		if err := checkVaultDir(c.VaultDir); err != nil {
			return Credential{}, err
		}
		return readKeyFile(filepath.Join(c.VaultDir, p.Name))
	case src == "pi":
		return lookupPi(p, c, now)
	case strings.HasPrefix(src, "env:"):
		name := strings.TrimPrefix(src, "env:")
		env := c.Env
		if env == nil {
			env = os.LookupEnv
		}
		v, ok := env(name)
		v = strings.TrimSpace(v)
		if !ok || v == "" {
			return Credential{}, fmt.Errorf("%s: unset: %w", src, ErrNoCredential)
		}
		if err := checkKey(v); err != nil {
			return Credential{}, fmt.Errorf("%s: %w", src, err)
		}
		return Credential{Value: v, OAuth: isOAuthKey(p, v)}, nil
	case strings.HasPrefix(src, "file:"):
		cr, err := readKeyFile(strings.TrimPrefix(src, "file:"))
		if err == nil {
			cr.OAuth = isOAuthKey(p, cr.Value)
		}
		return cr, err
	}
	return Credential{}, fmt.Errorf("%s: unknown credential source %q: %w", p.Name, src, errs.ErrUsage)
}

// CheckSource validates a credential source's spelling (for org.toml).
func CheckSource(src string) error {
	switch {
	case src == "vault", src == "pi":
		return nil
	case strings.HasPrefix(src, "env:") && len(src) > len("env:"):
		return nil
	case strings.HasPrefix(src, "file:") && filepath.IsAbs(strings.TrimPrefix(src, "file:")):
		return nil
	}
	return fmt.Errorf("credential source %q: want vault, pi, env:NAME or file:/ABSOLUTE/PATH: %w", src, errs.ErrUsage)
}

// isOAuthKey tells an Anthropic OAuth access token by its prefix, as the
// Anthropic clients do.
func isOAuthKey(p Provider, v string) bool {
	return p.Style == StyleAnthropic && strings.HasPrefix(v, "sk-ant-oat")
}

// checkVaultDir checks the vault folder (a symlink followed, as os.Stat
// does) at every lookup: its mode is the rule, and a chmod must count at
// the next request.
func checkVaultDir(dir string) error {
	var st syscall.Stat_t
	err := syscall.Stat(dir, &st)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("vault: %s missing: %w", dir, ErrNoCredential)
	}
	if err != nil {
		return fmt.Errorf("vault: %w", &os.PathError{Op: "stat", Path: dir, Err: err})
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return fmt.Errorf("vault: %s is not a folder: %w", dir, errs.ErrRefused)
	}
	if perm := os.FileMode(st.Mode).Perm(); perm&0o077 != 0 {
		return errs.WithHint(fmt.Errorf("vault folder %s is open to group or others (mode %04o): %w", dir, perm, ErrUnsafeMode),
			"chmod 700 "+dir)
	}
	return nil
}

// keyFiles caches vault and file: keys, piFiles pi's auth.json parsed
// (apart, so that a file read without the key files' mode rule is never
// served as a key file).
var (
	keyFiles fileCache[string]
	piFiles  fileCache[*piAuth]
)

// readKeyFile reads a vault or file: key: a regular file (a symlink is not
// followed), mode without group or other bits, one line. A key file that
// is still the one last read and accepted is served from keyFiles.
func readKeyFile(path string) (Credential, error) {
	if v, ok := keyFiles.get(path); ok {
		return Credential{Value: v}, nil
	}
	keyFiles.forget(path)
	began := time.Now()
	f, err := fsx.OpenRegular(path)
	if errors.Is(err, os.ErrNotExist) {
		return Credential{}, fmt.Errorf("%s: missing: %w", path, ErrNoCredential)
	}
	if err != nil {
		return Credential{}, fmt.Errorf("credential file: %w: %w", err, errs.ErrRefused)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Credential{}, fmt.Errorf("credential file %s: %w", path, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return Credential{}, errs.WithHint(fmt.Errorf("credential file %s is readable by group or others (mode %04o): %w", path, st.Mode().Perm(), ErrUnsafeMode),
			"chmod 600 "+path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyBytes+1))
	if err != nil {
		return Credential{}, fmt.Errorf("credential file %s: %w", path, err)
	}
	if len(data) > maxKeyBytes {
		return Credential{}, fmt.Errorf("credential file %s: larger than %d bytes: %w", path, maxKeyBytes, errs.ErrRefused)
	}
	v := strings.TrimSpace(string(data))
	if v == "" {
		return Credential{}, fmt.Errorf("%s: empty: %w", path, ErrNoCredential)
	}
	if err := checkKey(v); err != nil {
		return Credential{}, fmt.Errorf("credential file %s: %w", path, err)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		keyFiles.put(path, sys, began, v)
	}
	return Credential{Value: v}, nil
}

// checkKey refuses a key that cannot be a header value (a control byte or
// a line break would split the request), without quoting the key.
func checkKey(v string) error {
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < 0x20 || b == 0x7f {
			return fmt.Errorf("key holds a control character or line break: %w", errs.ErrRefused)
		}
	}
	return nil
}

// piEntry is one provider's entry in pi's auth.json (pi-coding-agent
// core/auth-storage): {"type":"api_key","key":...} or
// {"type":"oauth","access":...,"refresh":...,"expires":UNIX_MS}.
type piEntry struct {
	Type    string `json:"type"`
	Key     string `json:"key"`
	Access  string `json:"access"`
	Expires int64  `json:"expires"`
}

// PiAuthFile is the path of pi's auth.json for c.
func PiAuthFile(c Creds) string {
	dir := c.PiDir
	env := c.Env
	if env == nil {
		env = os.LookupEnv
	}
	if dir == "" {
		if d, ok := env("PI_CODING_AGENT_DIR"); ok && d != "" {
			dir = d
		}
	}
	if dir == "" {
		h, _ := os.UserHomeDir()
		if hv, ok := env("HOME"); ok && hv != "" {
			h = hv
		}
		dir = filepath.Join(h, ".pi", "agent")
	}
	if strings.HasPrefix(dir, "~/") {
		h, _ := os.UserHomeDir()
		dir = filepath.Join(h, dir[2:])
	}
	return filepath.Join(dir, "auth.json")
}

// lookupPi reads the host's pi login. An api_key entry's key may name an
// environment variable, as pi resolves it; a "!command" key is pi's shell
// escape and is not run here (the gateway runs as root, on the host).
func lookupPi(p Provider, c Creds, now time.Time) (Credential, error) {
	path := PiAuthFile(c)
	auth, err := readPiAuth(path)
	if err != nil {
		return Credential{}, err
	}
	if !auth.parsed {
		// pi may be rewriting it; the next request reads it again.
		return Credential{}, fmt.Errorf("pi: %s does not parse: %w", path, ErrNoCredential)
	}
	e, ok := auth.entries[p.Name]
	if !ok {
		return Credential{}, fmt.Errorf("pi: no %s login in %s: %w", p.Name, path, ErrNoCredential)
	}
	if !e.parsed {
		return Credential{}, fmt.Errorf("pi: %s entry of %s does not parse: %w", p.Name, path, ErrNoCredential)
	}
	switch e.Type {
	case "api_key":
		v := strings.TrimSpace(e.Key)
		if strings.HasPrefix(v, "!") {
			return Credential{}, fmt.Errorf("pi: %s key in %s is a shell command, which the gateway does not run: %w", p.Name, path, ErrNoCredential)
		}
		env := c.Env
		if env == nil {
			env = os.LookupEnv
		}
		if ev, ok := env(v); ok && ev != "" {
			v = strings.TrimSpace(ev)
		}
		if v == "" {
			return Credential{}, fmt.Errorf("pi: %s key in %s is empty: %w", p.Name, path, ErrNoCredential)
		}
		if err := checkKey(v); err != nil {
			return Credential{}, fmt.Errorf("pi: %s: %w", path, err)
		}
		return Credential{Value: v, OAuth: isOAuthKey(p, v)}, nil
	case "oauth":
		v := strings.TrimSpace(e.Access)
		if v == "" {
			return Credential{}, fmt.Errorf("pi: %s OAuth entry in %s has no access token: %w", p.Name, path, ErrNoCredential)
		}
		if now.UnixMilli() >= e.Expires {
			return Credential{}, fmt.Errorf("pi's %s OAuth token expired at %s: %w", p.Name,
				time.UnixMilli(e.Expires).UTC().Format(time.RFC3339), ErrCredentialExpired)
		}
		if err := checkKey(v); err != nil {
			return Credential{}, fmt.Errorf("pi: %s: %w", path, err)
		}
		return Credential{Value: v, OAuth: true}, nil
	}
	return Credential{}, fmt.Errorf("pi: %s entry of %s has type %q: %w", p.Name, path, e.Type, ErrNoCredential)
}

// piAuth is pi's auth.json as the gateway reads it: whether it parsed,
// and each provider's entry.
type piAuth struct {
	parsed  bool
	entries map[string]piParsed
}

// piParsed is one entry and whether it parsed.
type piParsed struct {
	piEntry
	parsed bool
}

func parsePiAuth(data []byte) *piAuth {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(bytes.TrimSpace(data), &all); err != nil {
		return &piAuth{}
	}
	a := &piAuth{parsed: true, entries: make(map[string]piParsed, len(all))}
	for name, raw := range all {
		var e piParsed
		e.parsed = json.Unmarshal(raw, &e.piEntry) == nil
		a.entries[name] = e
	}
	return a
}

// readPiAuth reads and parses pi's auth.json (a regular file, a symlink
// not followed), or serves it from piFiles while it is still the one
// read: the same bytes parse the same way, so a settled file is parsed
// once.
func readPiAuth(path string) (*piAuth, error) {
	if a, ok := piFiles.get(path); ok {
		return a, nil
	}
	piFiles.forget(path)
	began := time.Now()
	f, err := fsx.OpenRegular(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("pi: %s missing: %w", path, ErrNoCredential)
	}
	if err != nil {
		return nil, fmt.Errorf("pi: %s: %v: %w", path, err, ErrNoCredential)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("pi: %s: %v: %w", path, err, ErrNoCredential)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxPiAuthBytes))
	if err != nil {
		return nil, fmt.Errorf("pi: %s: %v: %w", path, err, ErrNoCredential)
	}
	a := parsePiAuth(data)
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		piFiles.put(path, sys, began, a)
	}
	return a, nil
}

// PutVault stores the key read from r as dir/PROVIDER: one trailing
// newline trimmed, an empty key refused, the file written atomically and
// durably with mode 0600, dir made (or reset to) mode 0700. The key is
// read from a reader, never an argument, so it never shows in ps.
func PutVault(dir, provider string, r io.Reader) error {
	if !ValidProviderName(provider) {
		return fmt.Errorf("provider name %q: want lower-case letters, digits, - or _: %w", provider, errs.ErrUsage)
	}
	data, err := io.ReadAll(io.LimitReader(r, maxKeyBytes+1))
	if err != nil {
		return fmt.Errorf("read key: %w", err)
	}
	if len(data) > maxKeyBytes {
		return fmt.Errorf("key longer than %d bytes: %w", maxKeyBytes, errs.ErrUsage)
	}
	data = bytes.TrimSuffix(data, []byte("\n"))
	data = bytes.TrimSuffix(data, []byte("\r"))
	if len(bytes.TrimSpace(data)) == 0 {
		return fmt.Errorf("empty key refused: %w", errs.ErrUsage)
	}
	if err := checkKey(string(data)); err != nil {
		return fmt.Errorf("key: %w", errs.ErrUsage)
	}
	if err := fsx.MkdirDurable(dir, 0o700); err != nil {
		return fmt.Errorf("vault %s: %w", dir, err)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("vault %s: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("vault %s is not a folder: %w", dir, errs.ErrRefused)
	}
	if st.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("vault %s: %w", dir, err)
		}
	}
	if err := os.Chown(dir, os.Geteuid(), os.Getegid()); err != nil {
		return fmt.Errorf("vault %s: %w", dir, err)
	}
	path := filepath.Join(dir, provider)
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("vault %s is not a regular file: %w", path, errs.ErrRefused)
	}
	if err := fsx.WriteFile(path, data, 0o600); err != nil {
		return err
	}
	return nil
}

// RemoveVault deletes dir/PROVIDER (durably); a missing key is ErrNotFound.
func RemoveVault(dir, provider string) error {
	if !ValidProviderName(provider) {
		return fmt.Errorf("provider name %q: %w", provider, errs.ErrUsage)
	}
	path := filepath.Join(dir, provider)
	if err := unix.Unlink(path); err != nil {
		if err == unix.ENOENT {
			return fmt.Errorf("vault has no %s key: %w", provider, errs.ErrNotFound)
		}
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return fsx.SyncDir(dir)
}

// ValidProviderName: a provider name is a route segment and a vault file
// name, so nothing that could escape either.
func ValidProviderName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return s[0] != '-' && s[0] != '_'
}

// LookupNamed tries sources in order for a credential that is not a model
// provider's (a [[repo]]'s token): vault:NAME is the vault's file NAME,
// env: and file: as for a provider. name says whose it is in errors.
func LookupNamed(name string, sources []string, c Creds, now time.Time) (Credential, error) {
	var tried []string
	for _, src := range sources {
		p, s := Provider{Name: name}, src
		if v, ok := strings.CutPrefix(src, "vault:"); ok {
			p.Name, s = v, "vault"
		}
		if s == "pi" || s == "vault" && p.Name == name {
			return Credential{}, fmt.Errorf("%s: credential source %q: want vault:NAME, env:NAME or file:PATH: %w", name, src, errs.ErrUsage)
		}
		cr, err := lookupSource(p, c, s, now)
		switch {
		case err == nil:
			cr.Source, cr.OAuth = src, false
			return cr, nil
		case errors.Is(err, ErrNoCredential):
			tried = append(tried, src)
		default:
			return Credential{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	if len(sources) == 0 {
		return Credential{}, fmt.Errorf("%s: no credential sources configured: %w", name, ErrNoCredential)
	}
	return Credential{}, errs.WithHint(fmt.Errorf("%s: no credential in %s: %w", name, strings.Join(tried, ", "), ErrNoCredential),
		"put one in the vault (`roster key put NAME` reads it from stdin) or set the variable for the dispatcher")
}
