package chat

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/tms"
)

func TestJudge(t *testing.T) {
	ch := config.Channel{Account: "team", Chats: []string{"*", "#ops"}, Owners: []string{"alice"},
		Allow: []string{"alice", "bob", "~carol"}, Mention: true}
	cases := []struct {
		name string
		m    Inbound
		want Verdict
	}{
		{"verified owner DM", Inbound{Chat: "alice", From: "alice", Verified: true, Text: "hi"}, Verdict{State: Received, Standing: tms.Owner, Text: "hi"}},
		{"allowed DM", Inbound{Chat: "bob", From: "bob", Verified: true, Text: "hi"}, Verdict{State: Received, Standing: tms.Proactive, Text: "hi"}},
		{"nick equal to owner, unverified", Inbound{Chat: "~alice", From: "~alice", Text: "hi"}, Verdict{State: Dropped, Pair: true}},
		{"unverified allowed by ~pattern", Inbound{Chat: "~carol", From: "~carol", Text: "hi"}, Verdict{State: Received, Standing: tms.Proactive, Text: "hi"}},
		{"adapter bug: unverified without ~", Inbound{Chat: "alice", From: "alice", Text: "hi"}, Verdict{State: Dropped, Pair: true}},
		{"stranger DM", Inbound{Chat: "eve", From: "eve", Verified: true, Text: "hi"}, Verdict{State: Dropped, Pair: true}},
		{"room, no mention", Inbound{Chat: "#ops", Room: true, From: "alice", Verified: true, Text: "lunch?"}, Verdict{State: Context, Text: "lunch?"}},
		{"room mention by owner is proactive", Inbound{Chat: "#ops", Room: true, From: "alice", Verified: true, Text: "dobby: look"}, Verdict{State: Received, Standing: tms.Proactive, Text: "dobby: look"}},
		{"room mention by stranger", Inbound{Chat: "#ops", Room: true, From: "eve", Verified: true, Text: "@dobby hi"}, Verdict{State: Dropped}},
	}
	for _, c := range cases {
		if got := Judge(ch, "dobby", "dobby-bot", c.m); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestMentions(t *testing.T) {
	for text, want := range map[string]bool{
		"dobby: look": true, "hey @Dobby, see": true, "DOBBY": true, "dobby-bot ping": true,
		"dobbyish": false, "xdobby": false, "dob by": false, "": false, "my_dobby": false,
	} {
		if got := Mentions(text, "dobby", "dobby-bot"); got != want {
			t.Errorf("Mentions(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestCutText(t *testing.T) {
	s := strings.Repeat("é", 1<<19) // 1 MiB of two-byte runes
	got := CutText(s)
	if len(got) > tms.MaxText || !utf8.ValidString(got) || !strings.Contains(got, "cut here") {
		t.Fatalf("cut: %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	if CutText("short") != "short" {
		t.Fatal("short text changed")
	}
}

func FuzzJudge(f *testing.F) {
	f.Add("alice", true, false, "hi dobby")
	f.Add("~alice", false, true, "x")
	f.Fuzz(func(t *testing.T, from string, verified, room bool, text string) {
		ch := config.Channel{Account: "team", Chats: []string{"*"}, Owners: []string{"alice"}, Allow: []string{"*"}, Mention: true}
		v := Judge(ch, "dobby", "dobby", Inbound{Chat: from, Room: room, From: from, Verified: verified, Text: text})
		if v.Standing == tms.Owner && (!verified || room || strings.HasPrefix(from, "~") || from != "alice") {
			t.Fatalf("owner standing for %q verified=%v room=%v", from, verified, room)
		}
		if len(v.Text) > tms.MaxText || !utf8.ValidString(v.Text) {
			t.Fatalf("text not cut or not UTF-8")
		}
	})
}
