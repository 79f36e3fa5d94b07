package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/creds"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// KeyCmd groups the model-key verbs (docs/gateway.md, "Configuration"):
// a key goes into the vault from stdin, never from an argument, and no
// command ever prints one.
type KeyCmd struct {
	Put KeyPutCmd `cmd:"" help:"Store PROVIDER's key in the vault, read from stdin (not echoed on a terminal)."`
	Ls  KeyLsCmd  `cmd:"" help:"Per provider, the credential source the gateway would use now, or why there is none."`
	Rm  KeyRmCmd  `cmd:"" help:"Delete PROVIDER's key from the vault."`
}

// KeyPutCmd is `key put PROVIDER`.
type KeyPutCmd struct {
	Provider string `arg:"" name:"PROVIDER" help:"A provider (anthropic, openai, or one org.toml defines), or a vault name a [[repo]] credential or a chat account reads (vault:NAME; chat-ACCOUNT)."`
}

// KeyLsCmd is `key ls`.
type KeyLsCmd struct {
	JSON bool `name:"json" help:"One JSON object per provider (JSON Lines)."`
}

// KeyRmCmd is `key rm PROVIDER`.
type KeyRmCmd struct {
	Provider string `arg:"" name:"PROVIDER" help:"The provider whose vault key goes."`
}

// providers are the built-in providers with org.toml's [gateway.NAME]
// tables merged over them, as the gateway sees them.
func providers(h home.Home) (map[string]creds.Provider, error) {
	org, err := config.LoadOrg(h)
	if err != nil {
		return nil, err
	}
	return creds.OrgProviders(org), nil
}

// repoVaultNames adds to ps the vault names the workers' [[repo]] grants
// read their tokens from (credential = ["vault:NAME"]): `key put NAME`
// stores one.
func repoVaultNames(h home.Home, ps map[string]creds.Provider) {
	names, err := config.ListWorkers(h)
	if err != nil {
		return
	}
	specs, _ := config.LoadWorkers(h, names)
	for _, w := range specs {
		if w == nil {
			continue
		}
		for _, r := range w.Repos {
			for _, src := range r.Credential {
				if n, ok := strings.CutPrefix(src, "vault:"); ok {
					if _, known := ps[n]; !known {
						ps[n] = creds.Provider{Name: n, Credentials: []string{"vault"}}
					}
				}
			}
		}
	}
}

// chatVaultNames adds to ps the vault names org.toml's chat accounts read
// their passwords from (default vault:chat-NAME, docs/channels.md).
func chatVaultNames(h home.Home, ps map[string]creds.Provider) {
	org, err := config.LoadOrg(h)
	if err != nil {
		return
	}
	for _, a := range org.Chat.Accounts {
		for _, src := range a.Sources {
			if n, ok := strings.CutPrefix(src, "vault:"); ok {
				if _, known := ps[n]; !known {
					ps[n] = creds.Provider{Name: n, Credentials: []string{"vault"}}
				}
			}
		}
	}
}

func knownProvider(ps map[string]creds.Provider, name string) error {
	if _, ok := ps[name]; ok {
		return nil
	}
	names := make([]string, 0, len(ps))
	for n := range ps {
		names = append(names, n)
	}
	sort.Strings(names)
	return errs.WithHint(errs.New(errs.ErrUsage, fmt.Sprintf("no provider %q", name)),
		"providers: "+strings.Join(names, ", ")+" (add one as [gateway."+name+"] in org.toml; a [[repo]] token: name it credential = [\"vault:"+name+"\"] in the worker's spec first; a chat account's password: chat-ACCOUNT, for org.toml's [chat.ACCOUNT])")
}

func (c *KeyPutCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	ps, err := providers(h)
	if err != nil {
		return err
	}
	repoVaultNames(h, ps)
	chatVaultNames(h, ps)
	if err := knownProvider(ps, c.Provider); err != nil {
		return err
	}
	key, err := readKey(env, c.Provider)
	if err != nil {
		return err
	}
	if err := creds.PutVault(h.Vault(), c.Provider, key); err != nil {
		return err
	}
	p := ps[c.Provider]
	if !hasSource(p, "vault") {
		env.Warn("%s's credentials in org.toml do not list \"vault\" (%s): the gateway will not use this key",
			c.Provider, strings.Join(p.Credentials, ", "))
	} else if src, err := creds.Which(p, creds.Creds{VaultDir: h.Vault()}, time.Now()); err == nil && src != "vault" {
		env.Warn("%s: %s comes before the vault in its credentials and serves now; the vault key is used only without it", c.Provider, src)
	}
	return nil
}

// readKey returns the key's reader: on a terminal one line read without
// echo after a prompt on stderr; otherwise stdin as it is (PutVault reads
// at most 64 KiB and trims one trailing newline).
func readKey(env *cli.Env, provider string) (io.Reader, error) {
	f, ok := env.Stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return env.Stdin, nil
	}
	fmt.Fprintf(env.Stderr, "%s: key for %s (not echoed): ", env.Name, provider)
	key, err := term.ReadPassword(int(f.Fd()))
	fmt.Fprintln(env.Stderr)
	if err != nil {
		return nil, fmt.Errorf("read key from the terminal: %w", err)
	}
	return strings.NewReader(string(key)), nil
}

func hasSource(p creds.Provider, src string) bool {
	for _, s := range p.Credentials {
		if s == src {
			return true
		}
	}
	return false
}

// keyRow is one provider in `key ls --json`. Never the key.
type keyRow struct {
	Provider string   `json:"provider"`
	Source   string   `json:"source"` // the source serving now; "" = none
	Sources  []string `json:"sources"`
	Problem  string   `json:"problem,omitempty"` // why none serves
	Hint     string   `json:"hint,omitempty"`
}

func (c *KeyLsCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	ps, err := providers(h)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(ps))
	for n := range ps {
		names = append(names, n)
	}
	sort.Strings(names)
	var rows [][]string
	now := time.Now()
	for _, n := range names {
		p := ps[n]
		r := keyRow{Provider: n, Sources: p.Credentials}
		if r.Sources == nil {
			r.Sources = []string{}
		}
		r.Source, err = creds.Which(p, creds.Creds{VaultDir: h.Vault()}, now)
		if err != nil {
			r.Source = ""
			// "anthropic: no credential in vault, pi: no credential" says
			// its provider and its kind twice.
			r.Problem = strings.TrimPrefix(err.Error(), n+": ")
			r.Problem = strings.TrimSuffix(r.Problem, ": "+creds.ErrNoCredential.Error())
			r.Hint = errs.HintOf(err)
		}
		if c.JSON {
			if err := cli.JSONLine(env.Stdout, r); err != nil {
				return err
			}
			continue
		}
		why := dashStr(r.Problem, "-")
		if r.Hint != "" {
			why += " (" + r.Hint + ")"
		}
		rows = append(rows, []string{n, dashStr(r.Source, "none"), dashStr(strings.Join(r.Sources, ", "), "-"), why})
	}
	if c.JSON {
		return nil
	}
	return cli.Table(env.Stdout, []string{"PROVIDER", "SOURCE", "SOURCES", "PROBLEM"}, rows)
}

func (c *KeyRmCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	if err := creds.RemoveVault(h.Vault(), c.Provider); err != nil {
		if errors.Is(err, errs.ErrNotFound) {
			return errs.New(errs.ErrNotFound, fmt.Sprintf("the vault holds no %s key", c.Provider))
		}
		return err
	}
	return nil
}

func dashStr(s, none string) string {
	if s == "" {
		return none
	}
	return s
}
