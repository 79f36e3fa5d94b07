package main

import (
	"strconv"
	"strings"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/snap"
)

// LsCmd is `roster-snap ls`.
type LsCmd struct {
	Worker string `arg:"" help:"The worker."`
	JSON   bool   `name:"json" help:"One JSON object per snapshot (JSON Lines)."`
}

func (c *LsCmd) Run(g *cli.Globals, env *cli.Env) error {
	return list(g, env, c.Worker, c.JSON)
}

func list(g *cli.Globals, env *cli.Env, name string, asJSON bool) error {
	h, w, err := worker(g, name)
	if err != nil {
		return err
	}
	opt, err := options(h, env, 0)
	if err != nil {
		return err
	}
	infos, err := snap.List(env.Ctx, w, opt)
	if err != nil {
		return err
	}
	if asJSON {
		for _, in := range infos {
			if err := cli.JSONLine(env.Stdout, in); err != nil {
				return err
			}
		}
		return nil
	}
	rows := make([][]string, 0, len(infos))
	for _, in := range infos {
		label := in.Label
		if in.Pinned {
			label = strings.TrimPrefix(label+", pinned", ", ")
		}
		if in.Daily {
			label = strings.TrimPrefix(label+", daily", ", ")
		}
		if label == "" {
			label = "-"
		}
		rows = append(rows, []string{in.ID, label, strconv.Itoa(in.Files), strconv.Itoa(in.Entries), size(in.Bytes), size(in.Shared), size(in.Own)})
	}
	// APPARENT is the files' length (a sparse file counts whole); the DISK
	// columns are allocated space, and DISK-OWN is what deleting it frees.
	return cli.Table(env.Stdout, []string{"ID", "LABEL", "FILES", "INODES", "APPARENT", "DISK-SHARED", "DISK-OWN"}, rows)
}

func size(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatInt(n, 10) + "B"
	}
	f := float64(n)
	i := -1
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + string(units[i]) + "iB"
}
