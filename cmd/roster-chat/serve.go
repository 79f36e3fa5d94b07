package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/roster-sh/roster/lib/chat"
	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/creds"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// ServeCmd is `roster-chat serve [--account NAME]...`.
type ServeCmd struct {
	Account []string `name:"account" placeholder:"NAME" help:"Only this account (repeatable; default: every [chat.NAME] of org.toml)."`
}

func (c *ServeCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	org, err := config.LoadOrg(h)
	if err != nil {
		return err
	}
	names, err := pickAccounts(org, c.Account)
	if err != nil {
		return err
	}
	lock, err := serveLock(env.Ctx, h)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	log := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	chats := servedChats(h, log)
	svc := &chat.Service{Home: h, Adapters: map[string]chat.Adapter{}, Log: log}
	for _, name := range names {
		a := org.Chat.Accounts[name]
		cfg := chat.Config{Account: name, Protocol: a.Protocol, Address: a.Address, Server: a.Server, TLS: a.TLS,
			CAFile: a.CAFile, Command: a.Command, Chats: chats[name], Log: log.With("account", name)}
		if a.Protocol != "exec" && len(a.Sources) > 0 {
			cr, err := creds.LookupNamed("chat account "+name, a.Sources, creds.Creds{VaultDir: h.Vault()}, time.Now())
			if err != nil {
				return errs.New(errs.ErrUsage, err.Error())
			}
			cfg.Password = cr.Value
		}
		ad, err := newAdapter(cfg)
		if err != nil {
			return errs.New(errs.ErrUsage, fmt.Sprintf("account %s: %v", name, err))
		}
		svc.Adapters[name] = ad
	}
	ctx, stop := signal.NotifyContext(env.Ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Info("serving", "accounts", names)
	err = svc.Run(ctx)
	log.Info("stopped")
	return err
}

// pickAccounts is the accounts to serve: those asked for, else all.
func pickAccounts(org *config.Org, asked []string) ([]string, error) {
	var names []string
	for n := range org.Chat.Accounts {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(asked) == 0 {
		if len(names) == 0 {
			return nil, errs.New(errs.ErrUsage, "org.toml has no chat account: add a [chat.NAME] table (docs/channels.md)")
		}
		return names, nil
	}
	for _, a := range asked {
		if _, ok := org.Chat.Accounts[a]; !ok {
			return nil, errs.New(errs.ErrUsage, fmt.Sprintf("no account %q in org.toml (accounts: %v)", a, names))
		}
	}
	return asked, nil
}

// serveLock is data/chat/serve.lock: one roster-chat serve per home.
func serveLock(ctx context.Context, h home.Home) (*fsx.Lock, error) {
	if err := fsx.MkdirDurable(h.ChatDir(), 0o700); err != nil {
		return nil, err
	}
	l, err := fsx.LockPath(ctx, filepath.Join(h.ChatDir(), "serve.lock"), false, 0)
	if errors.Is(err, errs.ErrBusy) {
		return nil, errs.New(errs.ErrBusy, "another roster-chat serve is running for this home (data/chat/serve.lock is held)")
	}
	return l, err
}

// servedChats is, by account, every chat a worker serves (not "*").
func servedChats(h home.Home, log *slog.Logger) map[string][]string {
	out := map[string][]string{}
	names, err := config.ListWorkers(h)
	if err != nil {
		log.Error("cannot list workers", "err", err)
		return out
	}
	ws, bad := config.LoadWorkers(h, names)
	for _, e := range bad {
		if e != nil {
			log.Warn("worker spec skipped", "err", e)
		}
	}
	seen := map[string]bool{}
	for _, w := range ws {
		if w == nil {
			continue // unreadable: its error is logged above
		}
		for _, ch := range w.Channels {
			for _, c := range ch.Chats {
				if c != "*" && !seen[ch.Account+"\x00"+c] {
					seen[ch.Account+"\x00"+c] = true
					out[ch.Account] = append(out[ch.Account], c)
				}
			}
		}
	}
	return out
}
