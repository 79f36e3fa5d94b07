package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/roster-sh/roster/lib/box"
	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// PsCmd is `roster-box ps`.
type PsCmd struct {
	JSON bool `name:"json" help:"One JSON object per box (JSON Lines)."`
}

func (c *PsCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	live, err := box.Live(h)
	if err != nil {
		return err
	}
	if c.JSON {
		for _, b := range live {
			if err := cli.JSONLine(env.Stdout, map[string]any{"run": b.Run, "worker": b.Worker, "task": b.Task,
				"since": b.Since, "pid": b.PID, "container": b.Container, "state": box.Phase(h, b)}); err != nil {
				return err
			}
		}
		return nil
	}
	zone := config.SystemZone() // SINCE is in the host zone, never the caller's TZ
	if org, err := config.LoadOrg(h); err == nil {
		zone = org.Zone()
	}
	rows := [][]string{}
	for _, b := range live {
		task := b.Task
		if task == "" {
			task = "(ad hoc)"
		}
		rows = append(rows, []string{b.Run, b.Worker, task, box.Phase(h, b), b.Since.In(zone).Format("2006-01-02 15:04:05"), strconv.Itoa(b.PID)})
	}
	return cli.Table(env.Stdout, []string{"RUN", "WORKER", "TASK", "STATE", "SINCE", "PID"}, rows)
}

// KillCmd is `roster-box kill`.
type KillCmd struct {
	RunID string `arg:"" name:"run" help:"The run (any unique prefix of its id)."`
}

func (c *KillCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	r, err := box.FindRun(h, c.RunID)
	if err != nil {
		return err
	}
	return box.Kill(r, box.Grace+30*time.Second)
}

// ReapCmd is `roster-box reap`.
type ReapCmd struct {
	RunID   string `arg:"" optional:"" name:"run" help:"The run (any unique prefix of its id) whose supervisor is gone."`
	Cgroups bool   `name:"cgroups" help:"Also remove every supervisor cgroup of this home that no process is in, wherever in the cgroup tree a supervisor made it (what the dispatcher runs at start-up and every 10 minutes)."`
}

func (c *ReapCmd) Run(g *cli.Globals, env *cli.Env) error {
	if c.RunID == "" && !c.Cgroups {
		return errs.New(errs.ErrUsage, "reap: give the run whose supervisor is gone, or --cgroups")
	}
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	if c.RunID != "" {
		if err := c.reapRun(h, env); err != nil {
			return err
		}
	}
	if !c.Cgroups {
		return nil
	}
	// Supervisors exit inside their worker's cgroup: the empty ones they
	// left (the kernel refuses to remove one a process is in), wherever
	// they started.
	removed, err := box.RemoveIdleHostCgroupsAnywhere(h.Dir)
	for _, name := range removed {
		fmt.Fprintf(env.Stderr, "roster-box: removed the empty supervisor cgroup %s\n", name)
	}
	return err
}

func (c *ReapCmd) reapRun(h home.Home, env *cli.Env) error {
	r, err := box.FindRun(h, c.RunID)
	if err != nil {
		return err
	}
	destroyed, recorded, err := box.ReapRun(r, time.Now())
	if err != nil {
		return err
	}
	// Its supervisor, killed or not, exited inside its worker's cgroup:
	// removed here unless another supervisor of the worker is in it.
	_ = box.RemoveHostCgroup(box.HostCgroupName(h.Dir, r.Worker))
	if destroyed {
		fmt.Fprintf(env.Stderr, "roster-box: run %s: destroyed the box its supervisor left\n", r.ID)
	}
	if recorded {
		fmt.Fprintf(env.Stderr, "roster-box: run %s: recorded its end (supervisor lost)\n", r.ID)
	}
	return nil
}

// ConnectionsCmd is `roster-box connections` (`roster connection ls`).
type ConnectionsCmd struct {
	Worker string `arg:"" optional:"" help:"Only this worker."`
	JSON   bool   `name:"json" help:"One JSON object per connection (JSON Lines)."`
}

type connRow struct {
	Worker string `json:"worker"`
	Name   string `json:"name"`
	Path   string `json:"path"`
	At     string `json:"at"`
	Mode   string `json:"mode"`
	When   string `json:"when"`
	// Problem is why a granted folder cannot be mounted (its path is
	// missing or not a folder: the worker is held until it is fixed).
	Problem string `json:"problem,omitempty"`
}

func (c *ConnectionsCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	names := []string{c.Worker}
	if c.Worker == "" {
		if names, err = config.ListWorkers(h); err != nil {
			return err
		}
	}
	var rows []connRow
	for _, name := range names {
		spec, err := config.LoadWorker(h, name)
		if err != nil {
			if c.Worker != "" {
				return err
			}
			env.Warn("%v", err)
			continue
		}
		w := h.Worker(name)
		rows = append(rows,
			connRow{name, "store", w.Store(), "~/store", "rw", "every run", ""},
			connRow{name, "locks", w.Locks(), "~/store/.locks", "rw", "every run", ""},
			connRow{name, "view", w.View(), "~/self/view", "ro", "every run", ""},
			connRow{name, "runs", w.Runs(), "~/self/runs", "ro", "every run", ""})
		ents, _ := os.ReadDir(w.ChannelStores())
		for _, e := range ents {
			ch, err := home.DecodeChannel(e.Name())
			if err != nil || !e.IsDir() {
				continue
			}
			rows = append(rows, connRow{name, "channel " + ch, w.ChannelStores() + "/" + e.Name(), "~/channel/store", "rw", "runs serving " + ch, ""})
		}
		for _, cn := range spec.Connections {
			r := connRow{Worker: name, Name: cn.Name, Path: cn.Path, At: "~/" + cn.At, Mode: cn.Mode, When: "every run"}
			if fi, err := os.Stat(cn.Path); err != nil {
				r.Problem = "missing"
			} else if !fi.IsDir() {
				r.Problem = "not a folder"
			}
			if r.Problem != "" {
				r.When = "never: " + r.Problem + " (the worker is held)"
			}
			rows = append(rows, r)
		}
	}
	if c.JSON {
		for _, r := range rows {
			if err := cli.JSONLine(env.Stdout, r); err != nil {
				return err
			}
		}
		return nil
	}
	var t [][]string
	for _, r := range rows {
		t = append(t, []string{r.Worker, r.Name, r.Path, r.At, r.Mode, r.When})
	}
	return cli.Table(env.Stdout, []string{"WORKER", "NAME", "HOST PATH", "IN THE BOX", "MODE", "WHEN"}, t)
}
