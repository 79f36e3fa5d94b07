package jsonw

import "unicode/utf8"

// AppendString appends s as a JSON string the way encoding/json does:
// \" \\ \b \f \n \r \t, other controls as \u00xx, U+2028 and U+2029 as
// \u2028 and \u2029, a byte that is not UTF-8 as U+FFFD (Go 1.27's
// encoding/json writes the character, earlier ones the escape \ufffd);
// with escapeHTML also < > & as \u003c \u003e \u0026, as json.Marshal
// does (an Encoder with SetEscapeHTML(false) does not).
func AppendString(b []byte, s string, escapeHTML bool) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case escapeHTML && (c == '<' || c == '>' || c == '&'):
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			case c >= 0x20:
				b = append(b, c)
			case c == '\b':
				b = append(b, `\b`...)
			case c == '\f':
				b = append(b, `\f`...)
			case c == '\n':
				b = append(b, `\n`...)
			case c == '\r':
				b = append(b, `\r`...)
			case c == '\t':
				b = append(b, `\t`...)
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = utf8.AppendRune(b, utf8.RuneError)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}
