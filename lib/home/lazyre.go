package home

import (
	"strconv"
	"strings"
	"sync"
)

// lazyRE is a name or id rule, written as a regular expression and
// matched without the regexp package: every rule is an anchored sequence
// of ASCII classes and literals, each once or {n} or {m,n} times
// (^[a-z][a-z0-9_-]{0,62}$, ^\d{8}-\d{6}\.\d{3}$), which a byte table per
// item matches in one pass exactly as regexp would
// (FuzzNameRulesMatchRegexp). It is compiled on first use, so a program
// that never checks a rule does not pay for it at start-up.
//
// What it buys, measured on roster-lock's uncontended run, the one
// benchmarked against flock(1) (`roster-lock --home H --worker w x --
// /bin/true`, 2 cores): with the rules compiled by regexp on first use,
// lib/home linked regexp, whose package initialisation (the unicode and
// regexp/syntax tables) ran at every start: 641,000 instructions (the
// median of 9 callgrind runs), 598,000 without it, and 250 KB less
// binary (2026-12-01). Earlier, with roster-lock still parsed by kong
// (the median of 600 interleaved runs): 4.4 ms with byte tables for the
// names alone; 4.9 ms with every rule a regexp compiled on first use;
// 5.2 ms with this package's and lib/config's regexps compiled at
// start-up.
type lazyRE struct {
	expr  string
	once  sync.Once
	items []ruleItem
}

func lazyRegexp(expr string) *lazyRE { return &lazyRE{expr: expr} }

// ruleItem is one class or literal and how many times it repeats.
type ruleItem struct {
	set      [256]bool
	min, max int
}

// MatchString reports whether s matches the whole rule. A rule this
// cannot compile is a programming error: it panics on first use, and
// TestNameRulesCompile uses them all.
func (l *lazyRE) MatchString(s string) bool {
	l.once.Do(func() {
		items, ok := compileRule(l.expr)
		if !ok {
			panic("home: rule " + strconv.Quote(l.expr) + " is not an anchored sequence of ASCII classes")
		}
		l.items = items
	})
	return matchItems(l.items, s)
}

// matchItems matches greedily: each item takes as many bytes of its class
// as it may. That is exact because compileRule takes only rules in which
// a repeat that may vary is last or followed by a class it cannot share
// a byte with.
func matchItems(items []ruleItem, s string) bool {
	p := 0
	for i := range items {
		it := &items[i]
		n := 0
		for n < it.max && p+n < len(s) && it.set[s[p+n]] {
			n++
		}
		if n < it.min {
			return false
		}
		p += n
	}
	return p == len(s)
}

// compileRule reads ^ITEM...$ where an ITEM is [class], \d, \. or a
// letter, digit, _ or -, then optionally {n} or {m,n}; a class holds
// letters, digits, ranges of them, and . _ ~ or a trailing -. An item
// whose count may vary must be the last or be followed by one that takes
// at least one byte of a class disjoint from its own.
func compileRule(expr string) ([]ruleItem, bool) {
	if !strings.HasPrefix(expr, "^") || !strings.HasSuffix(expr, "$") {
		return nil, false
	}
	rest := expr[1 : len(expr)-1]
	var items []ruleItem
	for rest != "" {
		var it ruleItem
		switch c := rest[0]; {
		case c == '[':
			j := strings.IndexByte(rest, ']')
			if j < 0 || !parseClass(rest[1:j], &it.set) {
				return nil, false
			}
			rest = rest[j+1:]
		case strings.HasPrefix(rest, `\d`):
			for b := '0'; b <= '9'; b++ {
				it.set[b] = true
			}
			rest = rest[2:]
		case strings.HasPrefix(rest, `\.`):
			it.set['.'] = true
			rest = rest[2:]
		case plainByte(c) || c == '_' || c == '-':
			it.set[c] = true
			rest = rest[1:]
		default:
			return nil, false
		}
		it.min, it.max = 1, 1
		if strings.HasPrefix(rest, "{") {
			j := strings.IndexByte(rest, '}')
			if j < 0 {
				return nil, false
			}
			lo, hi, isRange := strings.Cut(rest[1:j], ",")
			if !isRange {
				hi = lo
			}
			m, err1 := strconv.Atoi(lo)
			n, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil || m < 0 || m > n || n > 1000 {
				return nil, false
			}
			it.min, it.max = m, n
			rest = rest[j+1:]
		}
		items = append(items, it)
	}
	for i := 0; i+1 < len(items); i++ { // greedy must be exact (matchItems)
		a, b := &items[i], &items[i+1]
		if a.min == a.max {
			continue
		}
		if b.min == 0 {
			return nil, false
		}
		for c := range a.set {
			if a.set[c] && b.set[c] {
				return nil, false
			}
		}
	}
	return items, len(items) > 0
}

func plainByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
}

func parseClass(s string, set *[256]bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case i+2 < len(s) && s[i+1] == '-' && plainByte(b) && plainByte(s[i+2]) && b <= s[i+2]:
			for x := int(b); x <= int(s[i+2]); x++ {
				set[x] = true
			}
			i += 2
		case plainByte(b), b == '.', b == '_', b == '~', b == '-' && i == len(s)-1:
			set[b] = true
		default:
			return false
		}
	}
	return true
}
