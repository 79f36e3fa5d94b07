//go:build tools

// Package tools pins the suite's chosen dependencies before every package uses them.
package tools

import (
	_ "github.com/alecthomas/kong"
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/google/renameio/v2"
	_ "github.com/opencontainers/runc/libcontainer"
	_ "github.com/pelletier/go-toml/v2"
	_ "github.com/robfig/cron/v3"
	_ "github.com/rogpeppe/go-internal/testscript"
	_ "github.com/schollz/progressbar/v3"
	_ "golang.org/x/sys/unix"
)
