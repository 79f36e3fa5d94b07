package gateway

// The top-level keys a JSON body's scanner captures.
const (
	capModel = iota
	capID
	capUsage
	capKeys = 6 // room for a request's keys too (admit.go)
)

func captureKey(key []byte) int {
	switch string(key) {
	case "model":
		return capModel
	case "id":
		return capID
	case "usage":
		return capUsage
	}
	return -1
}

// jsonTop is a streaming scanner of one JSON object that captures the raw
// values of a few top-level keys (each at most maxCaptureVal bytes) and
// skips everything else without holding it: a response's content may be
// megabytes, its usage a few dozen bytes after it.
type jsonTop struct {
	kept    []byte          // the captured values, one after another
	span    [capKeys][2]int // each captured value's place in kept
	got     [capKeys]bool
	applied bool
	// pick names the keys captured (nil: captureKey, a response's); dup:
	// a captured key came twice; escKey: a top-level key held an escape.
	pick   func(key []byte) int
	dup    bool
	escKey bool

	depth   int  // nesting depth; 1 = inside the top-level object
	inStr   bool // inside a string
	esc     bool // after a backslash in a string
	expect  int  // at depth 1: 0 = a key is next, 1 = the value is next
	key     [64]byte
	keyLen  int
	inKey   bool
	capture int // the captured key of the current top-level value, or -1
	val     []byte
	dead    bool

	// the first bytes of val and kept: a small answer's capture costs
	// no allocation
	valBuf  [256]byte
	keptBuf [512]byte
}

// value is the raw text captured for key k.
func (j *jsonTop) value(k int) ([]byte, bool) {
	if !j.got[k] {
		return nil, false
	}
	return j.kept[j.span[k][0]:j.span[k][1]], true
}

func (j *jsonTop) feed(p []byte) {
	if j.dead {
		return
	}
	for i := 0; i < len(p); i++ {
		if j.inStr && !j.esc && !j.inKey && j.capture < 0 {
			// inside a string nobody reads (content, often most of
			// the body): on to its next quote or backslash in a tight
			// loop
			for i < len(p) && p[i] != '"' && p[i] != '\\' {
				i++
			}
			if i == len(p) {
				return
			}
		}
		c := p[i]
		if j.capture >= 0 {
			if len(j.val) >= maxCaptureVal {
				j.capture = -1
				j.val = j.val[:0]
			} else {
				j.val = append(j.val, c)
			}
		}
		if j.inStr {
			if j.inKey && c == '\\' && j.depth == 1 {
				j.escKey = true
			}
			if j.inKey && !j.esc && c != '"' && j.keyLen < len(j.key) {
				j.key[j.keyLen] = c
				j.keyLen++
			}
			switch {
			case j.esc:
				j.esc = false
			case c == '\\':
				j.esc = true
			case c == '"':
				j.inStr = false
				if j.inKey {
					j.inKey = false
				} else if j.capture >= 0 && j.depth == 1 {
					j.endValue()
				}
			}
			continue
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '"':
			j.inStr = true
			if j.depth == 1 && j.expect == 0 {
				j.inKey = true
				j.keyLen = 0
				continue
			}
			if j.depth == 1 && j.expect == 1 {
				j.startValue(c)
			}
		case ':':
			if j.depth == 1 {
				j.expect = 1
			}
		case ',':
			if j.depth == 1 {
				if j.capture >= 0 {
					j.val = j.val[:len(j.val)-1] // the comma
					j.endValue()
				}
				j.expect = 0
			}
		case '{', '[':
			if j.depth == 1 && j.expect == 1 {
				j.startValue(c)
			}
			j.depth++
		case '}', ']':
			j.depth--
			if j.depth == 1 && j.capture >= 0 {
				j.endValue()
			} else if j.depth == 0 && j.capture >= 0 {
				j.val = j.val[:len(j.val)-1] // the closing brace
				j.endValue()
			}
			if j.depth < 0 {
				j.dead = true
				return
			}
		default:
			if j.depth == 1 && j.expect == 1 && j.capture < 0 {
				j.startValue(c) // a number, true, false, null
			}
		}
	}
}

func (j *jsonTop) startValue(c byte) {
	j.expect = 2 // the value has begun; a comma ends it
	pick := j.pick
	if pick == nil {
		pick = captureKey
	}
	k := pick(j.key[:j.keyLen])
	if k >= 0 && (j.got[k] || j.capture == k) {
		j.dup = true
	}
	if k >= 0 && !j.got[k] {
		j.capture = k
		j.val = append(j.val[:0], c)
	}
}

func (j *jsonTop) endValue() {
	if k := j.capture; k >= 0 {
		j.span[k] = [2]int{len(j.kept), len(j.kept) + len(j.val)}
		j.kept = append(j.kept, j.val...)
		j.got[k] = true
	}
	j.capture = -1
	j.val = j.val[:0]
}
