package fakemodel

import (
	"regexp"
	"strings"
)

// A conversation names its script with a line "fakemodel-script: NAME"
// in its first user message (the briefing, which holds the task's text):
// so one task of a worker, or every task of one, can follow its own
// script while the others follow the default.
var scriptTagRE = regexp.MustCompile(`fakemodel-script:[ \t]*([A-Za-z0-9._-]+)`)

// maxTagScan is how much of the first user message is searched for the tag.
const maxTagScan = 256 << 10

// Name adds a named script, picked for a conversation whose first user
// message names it (fakemodel-script: NAME) or, failing that, whose model
// is NAME (a worker's spec names its model: one script per worker). Call
// it before serving.
func (s *Server) Name(name string, script Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.named == nil {
		s.named = map[string]Script{}
	}
	s.named[name] = script
}

// pick is the script for req and its name ("" for the default).
func (s *Server) pick(req *request) (string, Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.named) == 0 {
		return "", s.script
	}
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		var b strings.Builder
		flattenTo(&b, m.Content, 0, maxTagScan)
		if t := scriptTagRE.FindStringSubmatch(b.String()); t != nil {
			if sc, ok := s.named[t[1]]; ok {
				return t[1], sc
			}
		}
		break // the first user message only
	}
	if sc, ok := s.named[req.Model]; ok {
		return req.Model, sc
	}
	return "", s.script
}
