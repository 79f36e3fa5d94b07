package main

import (
	"fmt"

	"github.com/roster-sh/roster/lib/chat"
	"github.com/roster-sh/roster/lib/chat/execproto"
)

// newAdapter makes the adapter of cfg's protocol.
func newAdapter(cfg chat.Config) (chat.Adapter, error) {
	switch cfg.Protocol {
	case "exec":
		return execproto.New(cfg)
	}
	return nil, fmt.Errorf("protocol %q: not built in", cfg.Protocol)
}
