package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/roster-sh/roster/lib/chat"
	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/errs"
)

// readText is TEXT, or stdin for "-" (one trailing newline dropped).
func readText(args []string, env *cli.Env) (string, error) {
	if len(args) == 1 && args[0] == "-" {
		data, err := io.ReadAll(io.LimitReader(env.Stdin, chat.MaxReply+2))
		if err != nil {
			return "", fmt.Errorf("read stdin: %w", err)
		}
		s := strings.TrimSuffix(string(data), "\n")
		if len(s) > chat.MaxReply {
			return "", errs.New(errs.ErrUsage, fmt.Sprintf("the message on stdin is over %d KiB", chat.MaxReply>>10))
		}
		return s, nil
	}
	return strings.Join(args, " "), nil
}
