package config

import (
	"strings"
	"testing"
	"time"
)

func TestChatAccountsParsed(t *testing.T) {
	o, err := ParseOrg("org.toml", []byte(`
[dispatch]
chat_cap = 2
[ceilings]
live = "1h"
[chat]
budget_notice = false
[chat.team]
protocol = "xmpp"
address = "dobby@chat.example.org"
server = "127.0.0.1:5222"
tls = "starttls"
ca_file = "/etc/ca.pem"
[chat.libera]
protocol = "irc"
address = "dobby@irc.libera.chat:6697"
credential = []
[chat.desk]
protocol = "exec"
command = ["/usr/local/bin/bridge", "--x"]
`))
	if err != nil {
		t.Fatal(err)
	}
	if o.Dispatch.ChatCap != 2 || o.Ceilings.Live != time.Hour || o.Chat.BudgetNotice {
		t.Fatalf("chat_cap %d live %v notice %v", o.Dispatch.ChatCap, o.Ceilings.Live, o.Chat.BudgetNotice)
	}
	team := o.Chat.Accounts["team"]
	if team.Protocol != "xmpp" || team.Server != "127.0.0.1:5222" || team.TLS != "starttls" || team.CAFile != "/etc/ca.pem" ||
		len(team.Sources) != 1 || team.Sources[0] != "vault:chat-team" {
		t.Fatalf("team: %+v", team)
	}
	if l := o.Chat.Accounts["libera"]; len(l.Sources) != 0 || l.TLS != "require" {
		t.Fatalf("libera: credential = [] is none, tls defaults to require: %+v", l)
	}
	if d := o.Chat.Accounts["desk"]; len(d.Command) != 2 {
		t.Fatalf("desk: %+v", d)
	}
}

func TestChatAccountsRefused(t *testing.T) {
	for text, want := range map[string]string{
		"[chat.team]\nprotocol = \"slack\"":                                             `chat.team.protocol`,
		"[chat.team]\nprotocol = \"xmpp\"\naddress = \"nodomain\"":                      `bare JID`,
		"[chat.team]\nprotocol = \"irc\"\naddress = \"dobby@irc.example.org\"":          `nick@host:port`,
		"[chat.team]\nprotocol = \"xmpp\"\naddress = \"a@b\"\ntls = \"maybe\"":          `chat.team.tls`,
		"[chat.team]\nprotocol = \"exec\"":                                              `chat.team.command`,
		"[chat.team]\nprotocol = \"exec\"\ncommand = [\"x\"]\ncredential = [\"env:X\"]": `holds its own credentials`,
		"[chat.team]\nprotocol = \"xmpp\"\naddress = \"a@b\"\ncredential = [\"pi\"]":    `chat.team.credential`,
		"[chat.Team]\nprotocol = \"xmpp\"\naddress = \"a@b\"":                           `not an account name`,
		"[chat.team]\nprotocol = \"xmpp\"\naddress = \"a@b\"\nbogus = 1":                `unknown key "bogus"`,
		"[chat]\nbudget_notice = \"yes\"":                                               `true or false`,
		"[dispatch]\nchat_cap = 0":                                                      `dispatch.chat_cap`,
	} {
		_, err := ParseOrg("org.toml", []byte(text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error with %q", text, err, want)
		}
	}
}

func TestChannelsParsedAndFound(t *testing.T) {
	w := &Worker{}
	sp := &specParse{f: &workerFile{Channel: []channelFile{
		{Account: "team", Chats: []string{"*", "ops@rooms.example.org"}, Owners: []string{"alice@example.org"}, Live: "10m", Queue: "followup"},
		{Account: "libera", Chats: []string{"#ops"}, Allow: []string{"~*"}, Mention: new(bool)},
	}}, w: w, file: "dobby.toml", lines: map[string]int{}}
	if err := sp.channels(); err != nil {
		t.Fatal(err)
	}
	c := w.Channels[0]
	if c.Live != 10*time.Minute || c.Queue != "followup" || !c.Mention || len(c.Allow) != 1 || c.Allow[0] != "alice@example.org" {
		t.Fatalf("team channel (allow defaults to owners): %+v", c)
	}
	if l := w.Channels[1]; l.Mention || l.Queue != "collect" || l.Live != 0 {
		t.Fatalf("libera channel: %+v", l)
	}
	for name, want := range map[string]int{"team:bob@example.org": 0, "team:ops@rooms.example.org": 0, "libera:#ops": 1, "libera:#other": -1, "team:#x": -1, "nocolon": -1} {
		got := w.ChannelFor(name)
		if (want < 0) != (got == nil) || (got != nil && got.Account != w.Channels[want].Account) {
			t.Errorf("ChannelFor(%q) = %v, want channel %d", name, got, want)
		}
	}
}

func TestChannelsRefused(t *testing.T) {
	for _, c := range []struct {
		ch   channelFile
		want string
	}{
		{channelFile{Account: "Team", Chats: []string{"*"}}, "not an account name"},
		{channelFile{Account: "team"}, "at least one chat"},
		{channelFile{Account: "team", Chats: []string{"a b"}}, "not a chat"},
		{channelFile{Account: "team", Chats: []string{"*"}, Owners: []string{"*@x"}}, "one verified identity"},
		{channelFile{Account: "team", Chats: []string{"*"}, Owners: []string{"~alice"}}, "one verified identity"},
		{channelFile{Account: "team", Chats: []string{"*"}, Allow: []string{"[bad"}}, "not a valid pattern"},
		{channelFile{Account: "team", Chats: []string{"*"}, Live: "soon"}, "channel.live"},
		{channelFile{Account: "team", Chats: []string{"*"}, Queue: "lifo"}, "collect"},
	} {
		sp := &specParse{f: &workerFile{Channel: []channelFile{c.ch}}, w: &Worker{}, file: "dobby.toml", lines: map[string]int{}}
		if err := sp.channels(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.ch, err, c.want)
		}
	}
	sp := &specParse{f: &workerFile{Channel: []channelFile{{Account: "team", Chats: []string{"x"}}, {Account: "team", Chats: []string{"x"}}}}, w: &Worker{}, file: "f", lines: map[string]int{}}
	if err := sp.channels(); err == nil || !strings.Contains(err.Error(), "served twice") {
		t.Errorf("a chat served twice: %v", err)
	}
}

func TestMatchIdentity(t *testing.T) {
	for _, c := range []struct {
		pats []string
		who  string
		want bool
	}{
		{[]string{"*@example.org"}, "bob@example.org", true},
		{[]string{"*@example.org"}, "~ops@rooms.example.org/bob", false},
		{[]string{"*"}, "~bob", true},
		{[]string{"~*"}, "~bob", true},
		{[]string{"~*"}, "bob", false},
		{[]string{"alice"}, "~alice", false},
		{[]string{"~ops@rooms.example.org/*"}, "~ops@rooms.example.org/bob", true},
		{nil, "alice", false},
	} {
		if got := MatchIdentity(c.pats, c.who); got != c.want {
			t.Errorf("MatchIdentity(%q, %q) = %v", c.pats, c.who, got)
		}
	}
}
