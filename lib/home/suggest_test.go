package home

import "testing"

func TestSuggestNamesALikelyTypo(t *testing.T) {
	ws := []string{"alice", "bob", "docs-bot", "dobby"}
	for _, c := range []struct{ in, want string }{
		{"alic", "alice"}, {"alcie", "alice"}, {"bbo", ""}, {"bo", "bob"}, {"dobyb", "dobby"},
		{"docs", "docs-bot"}, {"zed", ""}, {"alice", ""}, {"do", ""},
	} {
		if got := Suggest(c.in, ws); got != c.want {
			t.Errorf("Suggest(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
