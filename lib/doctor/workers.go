package doctor

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"sort"
	"strings"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/creds"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/repos"
	"github.com/roster-sh/roster/lib/tms"
)

// checkWorkers: what would hold each worker (tms.SpecHold and
// tms.ProviderHold, as the dispatcher decides), and git where a repo is
// granted.
func checkWorkers(r *Report, o Options, org *config.Org, specs []spec) {
	repoWorkers := []string{}
	for _, s := range specs {
		w := s.Worker
		if w == nil {
			continue // said under config
		}
		if len(w.Repos) > 0 {
			repoWorkers = append(repoWorkers, s.Name)
		}
		bad := false
		if why := tms.SpecHold(w); why != "" {
			bad = true
			msg, fix, _ := strings.Cut(why, " (hint: ")
			r.add("worker", Problem, s.Name, "held: "+msg, orFix(strings.TrimSuffix(fix, ")"), "fix its spec (roster worker edit "+s.Name+")"))
		}
		if org == nil {
			r.add("worker", Warning, s.Name, "credentials not checked: org.toml is refused", "")
		} else if why, _ := tms.ProviderHold(o.Home, org, w, o.Getenv, o.Now()); why != "" {
			bad = true
			r.add("worker", Problem, s.Name, "held: "+why,
				"put a key in the vault (roster key put PROVIDER < key), or set the variable its sources name for the dispatcher; roster key ls says which source serves")
		}
		if w.Paused {
			r.add("worker", Warning, s.Name, "paused: nothing of it runs", "roster worker resume "+s.Name)
		} else if !bad {
			r.add("worker", OK, s.Name, workerSummary(w), "")
		}
	}
	if len(repoWorkers) == 0 {
		return
	}
	who := strings.Join(repoWorkers, ", ")
	bin, err := repos.Find()
	if err != nil {
		r.add("git", Problem, who, err.Error()+" (granted to "+who+")", errs.HintOf(err))
		return
	}
	v, _ := exec.Command(bin, "version").Output()
	r.add("git", OK, who, fmt.Sprintf("%s (%s) for the repos of %s", strings.TrimSpace(string(v)), bin, who), "")
}

func workerSummary(w *config.Worker) string {
	what := "command " + strings.Join(w.Command, " ")
	if w.Agent != "" {
		what = "agent " + w.Agent + " found"
	}
	if len(w.Gateway.Providers) > 0 && w.Network == "gateway" {
		what += ", a credential for " + strings.Join(w.Gateway.Providers, " or ")
	}
	return what
}

// checkChat: each account's credential, and whether its server accepts a
// TCP connection (exec: whether its bridge is there).
func checkChat(ctx context.Context, r *Report, o Options, org *config.Org) {
	if org == nil {
		return
	}
	names := make([]string, 0, len(org.Chat.Accounts))
	for n := range org.Chat.Accounts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		a := org.Chat.Accounts[name]
		if len(a.Sources) > 0 {
			c := creds.Creds{VaultDir: o.Home.Vault(), Env: func(n string) (string, bool) { v := o.Getenv(n); return v, v != "" }}
			if _, err := creds.LookupNamed("chat account "+name, a.Sources, c, o.Now()); err != nil {
				r.add("chat", Problem, name, err.Error(), orFix(errs.HintOf(err), "roster key put chat-"+name+" < password"))
				continue
			}
		}
		if a.Protocol == "exec" {
			if len(a.Command) == 0 {
				continue
			}
			if _, err := exec.LookPath(a.Command[0]); err != nil {
				r.add("chat", Problem, name, fmt.Sprintf("the bridge %s: %v", a.Command[0], err), "install it, or fix [chat."+name+"] command")
				continue
			}
			r.add("chat", OK, name, "exec bridge "+a.Command[0]+" found", "")
			continue
		}
		addr, err := chatAddr(a)
		if err != nil {
			r.add("chat", Problem, name, err.Error(), "fix [chat."+name+"] in org.toml")
			continue
		}
		dctx, cancel := context.WithTimeout(ctx, o.DialTimeout)
		conn, err := o.Dial(dctx, "tcp", addr)
		cancel()
		if err != nil {
			r.add("chat", Problem, name, fmt.Sprintf("%s server %s does not answer: %v", a.Protocol, addr, err),
				"check the server is up and reachable from this host (a firewall?), or fix [chat."+name+"] server")
			continue
		}
		conn.Close()
		r.add("chat", OK, name, fmt.Sprintf("%s server %s answers", a.Protocol, addr), "")
	}
}

// chatAddr is the host:port the account's adapter dials (as lib/chat/xmpp
// and lib/chat/irc decide it: server, else the address's own).
func chatAddr(a config.ChatAccount) (string, error) {
	if a.Server != "" {
		return a.Server, nil
	}
	switch a.Protocol {
	case "xmpp":
		_, domain, ok := strings.Cut(a.Address, "@")
		domain, _, _ = strings.Cut(domain, "/")
		if !ok || domain == "" {
			return "", fmt.Errorf("address %q is not a JID", a.Address)
		}
		port := "5222"
		if a.TLS == "require" {
			port = "5223"
		}
		return net.JoinHostPort(domain, port), nil
	case "irc":
		_, hp, ok := strings.Cut(a.Address, "@")
		if !ok || hp == "" {
			return "", fmt.Errorf("address %q: want nick@host:port", a.Address)
		}
		if _, _, err := net.SplitHostPort(hp); err == nil {
			return hp, nil
		}
		if a.TLS == "off" {
			return net.JoinHostPort(hp, "6667"), nil
		}
		return net.JoinHostPort(hp, "6697"), nil
	}
	return "", fmt.Errorf("protocol %q", a.Protocol)
}
