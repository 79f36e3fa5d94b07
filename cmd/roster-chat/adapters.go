package main

import (
	"fmt"

	"github.com/roster-sh/roster/lib/chat"
)

// newAdapter makes the adapter of cfg's protocol.
func newAdapter(cfg chat.Config) (chat.Adapter, error) {
	switch cfg.Protocol {
	}
	return nil, fmt.Errorf("protocol %q: not built in", cfg.Protocol)
}
