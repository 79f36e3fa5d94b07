package home

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/roster-sh/roster/lib/errs"
)

func TestWorkerNameRule(t *testing.T) {
	good := []string{"a", "dobby", "docs-bot", "w_2", "z" + strings.Repeat("9", 62)}
	bad := []string{"", "Dobby", "1x", "-x", "_x", "a.b", "a/b", "..", "a b", "é", "a\x00", "z" + strings.Repeat("9", 63)}
	for _, n := range good {
		if err := ValidWorker(n); err != nil {
			t.Errorf("ValidWorker(%q) = %v", n, err)
		}
	}
	for _, n := range bad {
		err := ValidWorker(n)
		if !errors.Is(err, errs.ErrUsage) || !strings.Contains(err.Error(), "a lower-case letter, then up to 62 of a-z 0-9 _ -") {
			t.Errorf("ValidWorker(%q) = %v, want a usage error stating the rule", n, err)
		}
	}
}

func TestTemplateIDRule(t *testing.T) {
	if err := ValidTemplate("heartbeat"); err != nil {
		t.Error(err)
	}
	for _, n := range []string{"", "Nightly", "a.b", "9am"} {
		if err := ValidTemplate(n); !errors.Is(err, errs.ErrUsage) {
			t.Errorf("ValidTemplate(%q) = %v", n, err)
		}
	}
}

func TestLockNameRule(t *testing.T) {
	for _, n := range []string{"store", "A", "_x", "0.lock", "a-b_c.d", "x" + strings.Repeat("y", 127)} {
		if err := ValidLock(n); err != nil {
			t.Errorf("ValidLock(%q) = %v", n, err)
		}
	}
	for _, n := range []string{"", ".", "..", ".hidden", "-x", "a/b", "a b", "x" + strings.Repeat("y", 128)} {
		if err := ValidLock(n); !errors.Is(err, errs.ErrUsage) || !strings.Contains(err.Error(), "invalid name") {
			t.Errorf("ValidLock(%q) = %v, want a usage error", n, err)
		}
	}
}

func TestChannelEncodingTable(t *testing.T) {
	for _, c := range []struct{ ch, enc string }{
		{"slack:C01/th 1", "slack%3AC01%2Fth%201"},
		{"..", "%2E."},
		{".", "%2E"},
		{".x", "%2Ex"},
		{"x.", "x."},
		{"a.b", "a.b"},
		{"AZaz09-._~", "AZaz09-._~"},
		{"%", "%25"},
		{"é", "%C3%A9"},
		{"a\tb\n", "a%09b%0A"},
		{"mail:bob@example.org", "mail%3Abob%40example.org"},
	} {
		got, err := EncodeChannel(c.ch)
		if err != nil || got != c.enc {
			t.Errorf("EncodeChannel(%q) = %q, %v; want %q", c.ch, got, err, c.enc)
			continue
		}
		back, err := DecodeChannel(got)
		if err != nil || back != c.ch {
			t.Errorf("DecodeChannel(%q) = %q, %v; want %q", got, back, err, c.ch)
		}
	}
}

func TestChannelFolderNeverDotOrHidden(t *testing.T) {
	for _, ch := range []string{".", "..", "...", ".git", "./x"} {
		enc, err := EncodeChannel(ch)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(enc, ".") || strings.Contains(enc, "/") {
			t.Errorf("EncodeChannel(%q) = %q: hidden, dot or with a slash", ch, enc)
		}
	}
}

func TestChannelEncodedLengthLimit(t *testing.T) {
	if _, err := EncodeChannel(strings.Repeat("a", 255)); err != nil {
		t.Errorf("255 bytes: %v", err)
	}
	// 85 colons encode to exactly 255 bytes; one more byte is too long.
	if _, err := EncodeChannel(strings.Repeat(":", 85)); err != nil {
		t.Errorf("255 encoded bytes: %v", err)
	}
	for _, ch := range []string{strings.Repeat("a", 256), strings.Repeat(":", 85) + "a"} {
		_, err := EncodeChannel(ch)
		if !errors.Is(err, errs.ErrUsage) || !strings.Contains(err.Error(), "too long") {
			t.Errorf("%d bytes: %v, want usage error 'too long'", len(ch), err)
		}
	}
}

func TestChannelRefusesEmptyNULAndInvalidUTF8(t *testing.T) {
	for _, ch := range []string{"", "a\x00b", "\xff", "a\xc3"} {
		if enc, err := EncodeChannel(ch); !errors.Is(err, errs.ErrUsage) {
			t.Errorf("EncodeChannel(%q) = %q, %v; want a usage error", ch, enc, err)
		}
	}
}

func TestChannelDecodeRefusesNonCanonical(t *testing.T) {
	for _, enc := range []string{
		"",
		"%2e.", // lower-case hex
		"%61",  // an unreserved byte encoded
		"..",   // a leading dot not encoded
		".x",   // likewise
		"a b",  // a byte that must be encoded
		"a:b",  // likewise
		"%",    // truncated
		"%4",   // truncated
		"%GG",  // not hex
		"%00",  // NUL
		"%FF",  // not UTF-8
		"a/b",  // a slash
		strings.Repeat("a", 256),
	} {
		if ch, err := DecodeChannel(enc); err == nil {
			t.Errorf("DecodeChannel(%q) = %q, want a refusal", enc, ch)
		}
	}
}

func TestChannelStorePath(t *testing.T) {
	w := Home{Dir: "/h"}.Worker("dobby")
	p, err := w.ChannelStore("slack:C01/th 1")
	if err != nil || p != "/h/data/workers/dobby/channel-stores/slack%3AC01%2Fth%201" {
		t.Fatalf("got %q %v", p, err)
	}
	if _, err := w.ChannelStore(""); err == nil {
		t.Fatal("empty channel accepted")
	}
}

// FuzzChannelEncoding: every valid channel round-trips, its folder name is
// one plain, non-hidden name of at most 255 bytes, and every folder name
// that decodes is the one encoding of what it decodes to.
func FuzzChannelEncoding(f *testing.F) {
	for _, s := range []string{"slack:C01/th 1", "..", ".x", "é", "%", "a\x00", "\xff", "%2E.", "%2e."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc, err := EncodeChannel(s)
		if err == nil {
			if len(enc) > 255 || enc == "" || enc[0] == '.' || strings.ContainsAny(enc, "/\x00") {
				t.Fatalf("EncodeChannel(%q) = %q", s, enc)
			}
			back, err := DecodeChannel(enc)
			if err != nil || back != s {
				t.Fatalf("round trip of %q: %q -> %q, %v", s, enc, back, err)
			}
		} else if s != "" && utf8.ValidString(s) && !strings.Contains(s, "\x00") && len(s) <= 85 {
			t.Fatalf("EncodeChannel(%q) refused a valid channel: %v", s, err)
		}
		if ch, err := DecodeChannel(s); err == nil {
			again, err := EncodeChannel(ch)
			if err != nil || again != s {
				t.Fatalf("DecodeChannel(%q) = %q, which encodes to %q, %v", s, ch, again, err)
			}
		}
	})
}
