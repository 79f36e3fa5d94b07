package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// InitCmd creates data/ and a commented org.toml.
type InitCmd struct{}

// Run makes the home: data/ (0700), data/workers/, workers/, and org.toml
// with every key commented out, unless one exists (never overwritten). Run
// again, it changes nothing; an existing org.toml that does not parse is
// reported (exit 14) after the folders are made.
func (c *InitCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, err := home.At(g.Home)
	if err != nil {
		return err
	}
	_, statErr := os.Stat(h.Data())
	if err := h.InitData(); err != nil {
		return fmt.Errorf("init %s: %w", h.Dir, err)
	}
	if err := fsx.WriteNew(h.OrgFile(), []byte(config.DefaultOrgTOML), 0o644); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	o, err := config.LoadOrg(h)
	if err != nil {
		return err
	}
	for _, w := range o.Warnings {
		env.Warn("%s", w)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		env.Note("made a roster home in %s; next: roster worker add NAME", h.Dir)
	}
	return nil
}
