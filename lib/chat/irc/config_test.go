package irc

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/roster-sh/roster/lib/chat"
)

func TestNewRefuses(t *testing.T) {
	cases := []struct {
		addr, tls, ca string
		want          string
	}{
		{"dobby@192.0.2.1:6667", "off", "", "loopback"},
		{"dobby@irc.example.org:6667", "off", "", "loopback"},
		{"dobby@10.0.0.1", "off", "", "loopback"},
		{"dobby@irc.example.org:6667", "starttls", "", `use tls = "require"`},
		{"dobby@irc.example.org:6697", "tls1.3", "", "want"},
		{"irc.example.org:6697", "require", "", "nick@host:port"},
		{"@irc.example.org:6697", "require", "", "nick@host:port"},
		{"do bby@irc.example.org:6697", "require", "", "not a valid IRC nick"},
		{"~dobby@irc.example.org:6697", "require", "", "not a valid IRC nick"},
		{"dobby@irc.example.org:6697", "require", "/nonexistent/ca.pem", "ca_file"},
	}
	for _, c := range cases {
		_, err := New(chat.Config{Account: "t", Address: c.addr, TLS: c.tls, CAFile: c.ca})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%q, tls %q) = %v, want an error with %q", c.addr, c.tls, err, c.want)
		}
	}
	for _, addr := range []string{"dobby@127.0.0.1:6667", "dobby@localhost:6667", "dobby@[::1]:6667", "dobby@127.0.0.1"} {
		if _, err := New(chat.Config{Address: addr, TLS: "off"}); err != nil {
			t.Errorf("New(%q, off) = %v", addr, err)
		}
	}
	a, err := New(chat.Config{Address: "dobby@irc.example.org:6697", Server: "127.0.0.1:7000", TLS: "require"})
	if err != nil || a.dial != "127.0.0.1:7000" || a.tlsConf.ServerName != "irc.example.org" {
		t.Fatalf("New with Server = %+v, %v", a, err)
	}
	if a, err := New(chat.Config{Address: "dobby@[::1]", TLS: "off"}); err != nil || a.dial != "[::1]:6667" {
		t.Fatalf("New([::1]) = %+v, %v", a, err)
	}
	a, err = New(chat.Config{Address: "dobby@irc.example.org", TLS: "require", Chats: []string{"#ops", "&local", "~bob", "alice"}})
	if err != nil || a.dial != "irc.example.org:6697" || strings.Join(a.rooms, ",") != "#ops,&local" {
		t.Fatalf("New = %+v, %v", a, err)
	}
}

// "off" to a name that resolves elsewhere than loopback is refused at the
// socket, and Run gives up.
func TestOffChecksThePeer(t *testing.T) {
	a, err := New(chat.Config{Account: "t", Address: "dobby@localhost:6667", TLS: "off"})
	if err != nil {
		t.Fatal(err)
	}
	dials := 0
	a.dialHook = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials++
		c, s := net.Pipe() // a peer that is no loopback TCP address
		go s.Close()
		return c, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = a.Run(ctx, func(context.Context, chat.Inbound) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "loopback") || dials != 1 {
		t.Fatalf("Run = %v after %d dials", err, dials)
	}
}

func TestSafeLines(t *testing.T) {
	cases := []struct {
		in     string
		budget int
		want   []string
	}{
		{"hello", 100, []string{"hello"}},
		{"a\r\nb\rc\nd", 100, []string{"a", "bc", "d"}},
		{"\x01ACTION hi\x01", 100, []string{"ACTION hi"}},
		{"x\x00y\x7fz\u0085w", 100, []string{"xyz", "w"}},
		{"tab\there", 100, []string{"tab here"}},
		{"\n\n  \n\t\n", 100, nil},
		{"aaaa bbbb cccc", 9, []string{"aaaa bbbb", "cccc"}},
		{"aaaaaaaaaaaa", 5, []string{"aaaaa", "aaaaa", "aa"}},
		{"ééééé", 5, []string{"éé", "éé", "é"}},
		{"🙂🙂", 5, []string{"🙂", "🙂"}},
		{"bad\xffutf8", 100, []string{"bad\uFFFDutf8"}},
		{"line\u2028next", 100, []string{"line", "next"}},
	}
	for _, c := range cases {
		got := safeLines(c.in, c.budget)
		if strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
			t.Errorf("safeLines(%q, %d) = %q, want %q", c.in, c.budget, got, c.want)
		}
	}
	if b := lineBudget("#ops"); b != 394 {
		t.Fatalf("lineBudget = %d", b)
	}
	// The whole relayed line fits 512 with the reserved prefix.
	target := strings.Repeat("n", 30)
	prefix := strings.Repeat("p", prefixReserve)
	for _, l := range safeLines(strings.Repeat("ü", 2000), lineBudget(target)) {
		if n := len(":" + prefix + " PRIVMSG " + target + " :" + l + "\r\n"); n > 512 {
			t.Fatalf("a relayed line of %d bytes", n)
		}
	}
}

func FuzzSafeLines(f *testing.F) {
	for _, s := range []string{"", "hello\r\nworld", "\x01ACTION x\x01", "a\x00b", "ééé ééé", "\xff\xfe", strings.Repeat("word ", 200)} {
		f.Add(s, 20)
	}
	f.Fuzz(func(t *testing.T, in string, budget int) {
		budget = 4 + abs(budget)%600
		lines := safeLines(in, budget)
		var joined strings.Builder
		for _, l := range lines {
			if l == "" || strings.TrimSpace(l) == "" {
				t.Fatalf("empty line in %q", lines)
			}
			if len(l) > budget {
				t.Fatalf("line of %d bytes over budget %d", len(l), budget)
			}
			if strings.ContainsAny(l, "\r\n\x00\x01") {
				t.Fatalf("control character in %q", l)
			}
			if !utf8.ValidString(l) {
				t.Fatalf("invalid UTF-8 out: %q", l)
			}
			joined.WriteString(l)
		}
		// Nothing but spaces and control characters is lost.
		keep := func(s string) string {
			return strings.Map(func(r rune) rune {
				if r == ' ' || r == '\t' || r == '\n' || r == '\u0085' || r == '\u2028' || r == '\u2029' || unicode.IsControl(r) {
					return -1
				}
				return r
			}, strings.ToValidUTF8(s, "\uFFFD"))
		}
		if keep(joined.String()) != keep(in) {
			t.Fatalf("text altered: %q -> %q", in, lines)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		if n == -n { // math.MinInt
			return 0
		}
		return -n
	}
	return n
}
