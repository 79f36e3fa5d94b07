package home

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/roster-sh/roster/lib/errs"
)

var (
	workerRE   = lazyRegexp(`^[a-z][a-z0-9_-]{0,62}$`)
	templateRE = lazyRegexp(`^[a-z][a-z0-9_-]{0,62}$`)
	lockRE     = lazyRegexp(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)
)

// ValidWorker checks a worker name against ^[a-z][a-z0-9_-]{0,62}$ (exit 2).
func ValidWorker(name string) error {
	if !workerRE.MatchString(name) {
		return errs.New(errs.ErrUsage, fmt.Sprintf(
			"worker %q: invalid name (a lower-case letter, then up to 62 of a-z 0-9 _ -)", name))
	}
	return nil
}

// ValidTemplate checks a template id (same rule as worker names).
func ValidTemplate(id string) error {
	if !templateRE.MatchString(id) {
		return errs.New(errs.ErrUsage, fmt.Sprintf(
			"template %q: invalid id (a lower-case letter, then up to 62 of a-z 0-9 _ -)", id))
	}
	return nil
}

// ValidLock checks a lock name against ^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$.
func ValidLock(name string) error {
	if !lockRE.MatchString(name) {
		return errs.New(errs.ErrUsage, fmt.Sprintf(
			"lock %q: invalid name (a letter, digit or _, then up to 127 of A-Z a-z 0-9 . _ -)", name))
	}
	return nil
}

// maxEncoded is the longest folder name a filesystem takes.
const maxEncoded = 255

func unreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// EncodeChannel percent-encodes a channel name into its folder name: RFC 3986
// unreserved bytes kept, every other byte %XX (upper-case hex), and a leading
// "." always encoded, so no channel folder is ".", ".." or hidden.
func EncodeChannel(ch string) (string, error) {
	if ch == "" {
		return "", errs.New(errs.ErrUsage, "channel: empty name")
	}
	if !utf8.ValidString(ch) {
		return "", errs.New(errs.ErrUsage, fmt.Sprintf("channel %q: not valid UTF-8", ch))
	}
	if strings.IndexByte(ch, 0) >= 0 {
		return "", errs.New(errs.ErrUsage, fmt.Sprintf("channel %q: contains a NUL byte", ch))
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(ch); i++ {
		c := ch[i]
		if unreserved(c) && !(i == 0 && c == '.') {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	if b.Len() > maxEncoded {
		return "", errs.New(errs.ErrUsage, fmt.Sprintf(
			"channel %q: too long (its folder name would be %d bytes, at most %d)", truncate(ch, 40), b.Len(), maxEncoded))
	}
	return b.String(), nil
}

// DecodeChannel is the inverse of EncodeChannel. It accepts only canonical
// encodings, so every channel has exactly one folder name.
func DecodeChannel(enc string) (string, error) {
	bad := func(why string) (string, error) {
		return "", errs.New(errs.ErrUsage, fmt.Sprintf("channel folder %q: %s", truncate(enc, 40), why))
	}
	if enc == "" || len(enc) > maxEncoded {
		return bad("empty or too long")
	}
	var b []byte
	for i := 0; i < len(enc); i++ {
		c := enc[i]
		if c == '%' {
			if i+2 >= len(enc) {
				return bad("truncated %-escape")
			}
			hi, ok1 := unhex(enc[i+1])
			lo, ok2 := unhex(enc[i+2])
			if !ok1 || !ok2 {
				return bad("bad %-escape")
			}
			b = append(b, hi<<4|lo)
			i += 2
			continue
		}
		if !unreserved(c) {
			return bad(fmt.Sprintf("byte %q must be %%-encoded", c))
		}
		b = append(b, c)
	}
	s := string(b)
	again, err := EncodeChannel(s)
	if err != nil {
		return "", err
	}
	if again != enc {
		return bad("not the canonical encoding")
	}
	return s, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
