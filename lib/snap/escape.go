package snap

// EscapeName escapes a file name for the change list the way rsync does in
// the C locale: every byte below 0x20 except tab, DEL and every byte from
// 0x80 up become \#ooo (three octal digits), and a backslash that would
// otherwise start something that reads as an escape (\# followed by three
// digits) is itself escaped. So a name can never hold a newline in the
// list, and UnescapeName(EscapeName(s)) == s for every s.
func EscapeName(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if needsEscape(s, i) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	b := make([]byte, 0, len(s)+4*n)
	return string(appendEscaped(b, s))
}

func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if needsEscape(s, i) {
			b = append(b, '\\', '#', '0'+c>>6, '0'+(c>>3)&7, '0'+c&7)
			continue
		}
		b = append(b, c)
	}
	return b
}

func needsEscape(s string, i int) bool {
	c := s[i]
	if c == '\\' {
		return i+4 < len(s) && s[i+1] == '#' && isDigit(s[i+2]) && isDigit(s[i+3]) && isDigit(s[i+4])
	}
	return (c < 0x20 && c != '\t') || c >= 0x7f
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// UnescapeName reverses EscapeName (for readers of the change list).
func UnescapeName(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 < len(s) && s[i+1] == '#' && isOct(s[i+2]) && isOct(s[i+3]) && isOct(s[i+4]) && s[i+2] <= '3' {
			if b == nil {
				b = append(make([]byte, 0, len(s)), s[:i]...)
			}
			b = append(b, (s[i+2]-'0')<<6|(s[i+3]-'0')<<3|(s[i+4]-'0'))
			i += 4
			continue
		}
		if b != nil {
			b = append(b, s[i])
		}
	}
	if b == nil {
		return s
	}
	return string(b)
}

func isOct(c byte) bool { return '0' <= c && c <= '7' }
