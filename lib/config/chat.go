package config

import (
	"fmt"
	"net"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/pelletier/go-toml/v2"

	"github.com/roster-sh/roster/lib/home"
)

// ChatAccount is one [chat.NAME] table of org.toml: an account roster-chat
// logs in with (docs/channels.md).
type ChatAccount struct {
	Name     string
	Protocol string   // "xmpp" | "irc" | "exec"
	Address  string   // xmpp: the JID; irc: "nick@host:port"; exec: optional, shown only
	Server   string   // xmpp: host:port to dial instead of the JID's domain at 5222
	TLS      string   // "require" | "starttls" | "off" (loopback only)
	CAFile   string   // PEM roots to trust instead of the system's
	Sources  []string // credential sources tried in order (vault:NAME, env:NAME, file:/PATH); default vault:chat-NAME; none: no credential
	Command  []string // exec: the bridge and its arguments
}

// Chat defaults.
const (
	DefaultChatCap      = 4
	DefaultLiveCeiling  = "4h"
	DefaultChannelQueue = "collect"
)

type chatAccountFile struct {
	Protocol   string    `toml:"protocol"`
	Address    string    `toml:"address"`
	Server     string    `toml:"server"`
	Credential *[]string `toml:"credential"`
	TLS        string    `toml:"tls"`
	CAFile     string    `toml:"ca_file"`
	Command    []string  `toml:"command"`
}

var chatNameRE = lazyRegexp(`^[a-z][a-z0-9-]{0,25}$`)

// parseChat reads org.toml's [chat] table: budget_notice, and one
// [chat.NAME] per account.
func parseChat(raw map[string]any, o *Org, bad func(key, msg string) error) error {
	o.Chat.BudgetNotice = true
	o.Chat.Accounts = map[string]ChatAccount{}
	names := make([]string, 0, len(raw))
	for k := range raw {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		key := "chat." + name
		if name == "budget_notice" {
			b, ok := raw[name].(bool)
			if !ok {
				return bad(key, "must be true or false")
			}
			o.Chat.BudgetNotice = b
			continue
		}
		tbl, ok := raw[name].(map[string]any)
		if !ok {
			return bad(key, "must be a table (an account: [chat.NAME]) or budget_notice")
		}
		if !chatNameRE().MatchString(name) {
			return bad(key, fmt.Sprintf("%q is not an account name (a lower-case letter, then up to 25 of a-z 0-9 -)", name))
		}
		data, err := toml.Marshal(tbl)
		if err != nil {
			return bad(key, "must be a table")
		}
		var f chatAccountFile
		if err := decodeStrict(data, &f); err != nil {
			return bad(key, tomlMsg(err))
		}
		a, err := chatAccount(name, f)
		if err != nil {
			k, msg, _ := strings.Cut(err.Error(), ": ")
			return bad(key+"."+k, msg)
		}
		o.Chat.Accounts[name] = a
	}
	return nil
}

// chatAccount checks one account; an error is "KEY: message".
func chatAccount(name string, f chatAccountFile) (ChatAccount, error) {
	a := ChatAccount{Name: name, Protocol: f.Protocol, Address: f.Address, Server: f.Server, TLS: f.TLS, CAFile: f.CAFile}
	if a.TLS == "" {
		a.TLS = "require"
	}
	switch a.TLS {
	case "require", "starttls", "off":
	default:
		return a, fmt.Errorf("tls: %q must be \"require\" (TLS from the first byte), \"starttls\" or \"off\" (loopback only)", a.TLS)
	}
	if a.CAFile != "" && !filepath.IsAbs(a.CAFile) {
		return a, fmt.Errorf("ca_file: %q must be an absolute path", a.CAFile)
	}
	switch a.Protocol {
	case "xmpp":
		local, domain, ok := strings.Cut(a.Address, "@")
		if !ok || local == "" || domain == "" || strings.ContainsAny(a.Address, "/ \t\n\x00") || strings.Count(a.Address, "@") != 1 {
			return a, fmt.Errorf("address: %q must be the account's bare JID (user@domain)", a.Address)
		}
		if a.Server != "" {
			if _, _, err := net.SplitHostPort(a.Server); err != nil {
				return a, fmt.Errorf("server: %q must be host:port", a.Server)
			}
		}
	case "irc":
		nick, hp, ok := strings.Cut(a.Address, "@")
		if _, _, err := net.SplitHostPort(hp); !ok || nick == "" || err != nil || strings.ContainsAny(nick, " ,*?!@#:\x00\r\n") {
			return a, fmt.Errorf("address: %q must be nick@host:port (e.g. \"dobby@irc.libera.chat:6697\")", a.Address)
		}
		if a.Server != "" {
			return a, fmt.Errorf("server: irc takes its server from address (nick@host:port)")
		}
	case "exec":
		if len(f.Command) == 0 || f.Command[0] == "" {
			return a, fmt.Errorf("command: an exec account needs the bridge's command (argv)")
		}
		for i, w := range f.Command {
			if strings.IndexByte(w, 0) >= 0 {
				return a, fmt.Errorf("command: word %d holds a NUL byte", i+1)
			}
		}
		if f.Credential != nil && len(*f.Credential) > 0 {
			return a, fmt.Errorf("credential: an exec bridge holds its own credentials: remove credential")
		}
		a.Command = append([]string{}, f.Command...)
		return a, nil
	default:
		return a, fmt.Errorf("protocol: %q must be \"xmpp\", \"irc\" or \"exec\"", a.Protocol)
	}
	if len(f.Command) > 0 {
		return a, fmt.Errorf("command: only an exec account runs a command")
	}
	// credential = [] is an account without one (an IRC server without
	// SASL); absent, the vault's chat-NAME.
	if f.Credential == nil {
		a.Sources = []string{"vault:chat-" + name}
	} else {
		a.Sources = append([]string{}, (*f.Credential)...)
	}
	for _, src := range a.Sources {
		if err := CheckRepoSource(src); err != nil {
			return a, fmt.Errorf("credential: %v", err)
		}
	}
	return a, nil
}

// Channel is one [[channel]] of a worker spec: the chats of one account
// the worker serves (docs/channels.md).
type Channel struct {
	Account string
	Chats   []string      // DMs and rooms; "*" = every DM
	Owners  []string      // verified identities whose DMs have owner standing
	Allow   []string      // who may reach the worker (patterns; default: Owners)
	Mention bool          // rooms: only messages naming the worker are relayed
	Live    time.Duration // a live session's idle end; 0 = one run per message
	Queue   string        // "collect" | "followup"
}

// Name is the channel name of chat on this account: ACCOUNT:CHAT.
func (c Channel) Name(chat string) string { return c.Account + ":" + chat }

// Serves tells whether the channel serves chat (a DM identity or a room);
// dm says it is a direct message ("*" serves every DM).
func (c Channel) Serves(chat string, dm bool) bool {
	for _, x := range c.Chats {
		if x == chat || (dm && x == "*") {
			return true
		}
	}
	return false
}

// ChannelFor is the [[channel]] serving channel name ACCOUNT:CHAT (the
// chat named, else "*" for a DM), nil if none does.
func (w *Worker) ChannelFor(name string) *Channel {
	acct, chat, ok := strings.Cut(name, ":")
	if !ok {
		return nil
	}
	var star *Channel
	for i := range w.Channels {
		c := &w.Channels[i]
		if c.Account != acct {
			continue
		}
		for _, x := range c.Chats {
			if x == chat {
				return c
			}
			if x == "*" && star == nil && !strings.HasPrefix(chat, "#") && !strings.HasPrefix(chat, "&") {
				star = c
			}
		}
	}
	return star
}

type channelFile struct {
	Account string   `toml:"account"`
	Chats   []string `toml:"chats"`
	Owners  []string `toml:"owners"`
	Allow   []string `toml:"allow"`
	Mention *bool    `toml:"mention"`
	Live    string   `toml:"live"`
	Queue   string   `toml:"queue"`
}

// channels checks each [[channel]]: a known-shaped account, chats given
// once across the spec, identity patterns, live and queue.
func (sp *specParse) channels() error {
	seen := map[string]bool{}
	for i, cf := range sp.f.Channel {
		cbad := func(k, msg string) error { return specError(sp.file, sp.tableLine("channel", i, k), "channel."+k, msg) }
		if !chatNameRE().MatchString(cf.Account) {
			return cbad("account", fmt.Sprintf("%q is not an account name (org.toml's [chat.NAME])", cf.Account))
		}
		c := Channel{Account: cf.Account, Mention: true, Queue: cf.Queue}
		if len(cf.Chats) == 0 {
			return cbad("chats", "name at least one chat this worker serves (a JID, \"#room\", or \"*\" for every DM)")
		}
		for _, chat := range cf.Chats {
			if err := checkChat(chat); err != nil {
				return cbad("chats", err.Error())
			}
			if _, err := home.EncodeChannel(c.Name(chat)); err != nil {
				return cbad("chats", err.Error())
			}
			if seen[c.Name(chat)] {
				return cbad("chats", fmt.Sprintf("%q is served twice (channel %s)", chat, c.Name(chat)))
			}
			seen[c.Name(chat)] = true
		}
		c.Chats = append([]string{}, cf.Chats...)
		for _, k := range []struct {
			key  string
			pats []string
		}{{"owners", cf.Owners}, {"allow", cf.Allow}} {
			for _, p := range k.pats {
				if err := checkIdentityPattern(p); err != nil {
					return cbad(k.key, err.Error())
				}
			}
		}
		for _, o := range cf.Owners {
			if strings.ContainsAny(o, "*?[") || strings.HasPrefix(o, "~") {
				return cbad("owners", fmt.Sprintf("%q: an owner is one verified identity (no pattern, no \"~\")", o))
			}
		}
		c.Owners = append([]string{}, cf.Owners...)
		if cf.Allow != nil {
			c.Allow = append([]string{}, cf.Allow...)
		} else {
			c.Allow = append([]string{}, cf.Owners...)
		}
		if cf.Mention != nil {
			c.Mention = *cf.Mention
		}
		if cf.Live != "" {
			d, err := ParseDuration(cf.Live, true)
			if err != nil {
				return cbad("live", err.Error())
			}
			c.Live = d
		}
		switch c.Queue {
		case "":
			c.Queue = DefaultChannelQueue
		case "collect", "followup":
		default:
			return cbad("queue", fmt.Sprintf("%q must be \"collect\" (messages mid-turn make one next turn) or \"followup\" (one turn each)", c.Queue))
		}
		sp.w.Channels = append(sp.w.Channels, c)
	}
	return nil
}

func checkChat(chat string) error {
	if chat == "" || strings.IndexFunc(chat, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) >= 0 {
		return fmt.Errorf("%q is not a chat (a JID, \"#room\" or \"*\"; no spaces or control characters)", chat)
	}
	return nil
}

func checkIdentityPattern(p string) error {
	if p == "" || strings.IndexFunc(p, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) >= 0 {
		return fmt.Errorf("%q is not an identity (no spaces or control characters)", p)
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("%q is not a valid pattern (* ? [..])", p)
	}
	return nil
}

// MatchIdentity tells whether who matches one of pats (path.Match
// patterns: "*" matches across "/" here too, since identities hold "/").
func MatchIdentity(pats []string, who string) bool {
	for _, p := range pats {
		if p == who || p == "*" {
			return true
		}
		if ok, _ := path.Match(p, who); ok {
			return true
		}
		if ok, _ := path.Match(strings.ReplaceAll(p, "/", "\x00"), strings.ReplaceAll(who, "/", "\x00")); ok {
			return true
		}
	}
	return false
}
