package main

import (
	"fmt"

	"github.com/roster-sh/roster/lib/chat"
	"github.com/roster-sh/roster/lib/chat/execproto"
	"github.com/roster-sh/roster/lib/chat/irc"
	"github.com/roster-sh/roster/lib/chat/xmpp"
)

// newAdapter makes the adapter of cfg's protocol.
func newAdapter(cfg chat.Config) (chat.Adapter, error) {
	switch cfg.Protocol {
	case "xmpp":
		return xmpp.New(cfg)
	case "irc":
		return irc.New(cfg)
	case "exec":
		return execproto.New(cfg)
	}
	return nil, fmt.Errorf("protocol %q: not built in", cfg.Protocol)
}
