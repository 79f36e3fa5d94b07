package gateway

import (
	"bytes"
	"encoding/json"
)

// decodeString decodes a captured JSON string as json.Unmarshal would; a
// plain string (printable ASCII, no escapes), which model names and ids
// are, is read without it.
func decodeString(v []byte) (string, bool) {
	t := bytes.TrimRight(v, " \t\r\n")
	if len(t) >= 2 && t[0] == '"' && t[len(t)-1] == '"' {
		plain := true
		for _, c := range t[1 : len(t)-1] {
			if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
				plain = false
				break
			}
		}
		if plain {
			return string(t[1 : len(t)-1]), true
		}
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// decodeUsage decodes a captured usage object into f and reports whether
// json.Unmarshal into usageJSON would have succeeded, with the same
// result. The objects upstreams send (integer counts, flat *_details
// objects, plain strings such as service_tier) are read by a small
// scanner without allocating; anything else it does not know for sure
// (a float, an escape, an array, a key in capitals that encoding/json
// would match regardless of case) goes to json.Unmarshal itself.
func decodeUsage(v []byte, f *usageFields) bool {
	var fast usageFields
	if s := (usageScan{b: v}); s.object(&fast) {
		*f = fast
		return true
	}
	var j usageJSON
	if json.Unmarshal(v, &j) != nil {
		return false
	}
	*f = j.fields()
	return true
}

// usageScan is decodeUsage's scanner; every method returns false for
// input it does not handle (then json.Unmarshal decides).
type usageScan struct {
	b []byte
	i int
}

func (s *usageScan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

func (s *usageScan) eat(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// object reads the whole input as a usage object into f.
func (s *usageScan) object(f *usageFields) bool {
	ok := s.members(func(key []byte) bool {
		var dst *optInt
		var det *optDetails
		switch string(key) {
		case "input_tokens":
			dst = &f.in
		case "output_tokens":
			dst = &f.out
		case "cache_read_input_tokens":
			dst = &f.cacheRead
		case "cache_creation_input_tokens":
			dst = &f.cacheWrite
		case "prompt_tokens":
			dst = &f.prompt
		case "completion_tokens":
			dst = &f.completion
		case "prompt_tokens_details":
			det = &f.promptDetails
		case "input_tokens_details":
			det = &f.inputDetails
		default:
			return s.skip(2)
		}
		if dst != nil {
			return s.intOrNull(dst)
		}
		if s.null() {
			*det = optDetails{} // null sets the pointer to nil
			return true
		}
		// a repeated object decodes into the one before, as encoding/json does
		det.ok = true
		return s.members(func(key []byte) bool {
			if string(key) == "cached_tokens" {
				return s.intOrNull(&det.cached)
			}
			return s.skip(1)
		})
	})
	s.ws()
	return ok && s.i == len(s.b)
}

// members reads an object, calling member for each key with the scanner
// at its value.
func (s *usageScan) members(member func(key []byte) bool) bool {
	if !s.eat('{') {
		return false
	}
	if s.eat('}') {
		return true
	}
	for {
		key, ok := s.key()
		if !ok || !s.eat(':') {
			return false
		}
		s.ws()
		if !member(key) {
			return false
		}
		if s.eat('}') {
			return true
		}
		if !s.eat(',') {
			return false
		}
	}
}

// key reads a key of lower-case letters, digits and underscores (which
// encoding/json matches exactly).
func (s *usageScan) key() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '_':
		default:
			return nil, false
		}
	}
	return nil, false
}

func (s *usageScan) null() bool {
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// intOrNull reads an integer of at most 18 digits (it fits an int64) or
// null into dst.
func (s *usageScan) intOrNull(dst *optInt) bool {
	if s.null() {
		*dst = optInt{}
		return true
	}
	n, ok := s.integer()
	if ok {
		*dst = optInt{n, true}
	}
	return ok
}

func (s *usageScan) integer() (int64, bool) {
	neg := s.i < len(s.b) && s.b[s.i] == '-'
	if neg {
		s.i++
	}
	start := s.i
	var n int64
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		n = n*10 + int64(s.b[s.i]-'0')
		s.i++
	}
	digits := s.i - start
	if digits == 0 || digits > 18 || digits > 1 && s.b[start] == '0' {
		return 0, false
	}
	if s.i < len(s.b) {
		switch s.b[s.i] { // a fraction or an exponent: not an int64
		case '.', 'e', 'E':
			return 0, false
		}
	}
	if neg {
		n = -n
	}
	return n, true
}

// skip passes over a value of a field nobody reads: an integer, a plain
// string, true, false, null, or (depth > 0) an object of such values.
func (s *usageScan) skip(depth int) bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		for s.i++; s.i < len(s.b); s.i++ {
			switch c := s.b[s.i]; {
			case c == '"':
				s.i++
				return true
			case c < 0x20 || c == '\\':
				return false
			}
		}
		return false
	case c == '-' || '0' <= c && c <= '9':
		_, ok := s.integer()
		return ok
	case c == '{':
		return depth > 0 && s.members(func([]byte) bool { return s.skip(depth - 1) })
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
			s.i += len(lit)
			return true
		}
	}
	return false
}
