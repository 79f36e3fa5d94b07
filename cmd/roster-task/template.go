package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/tms"
)

// TemplateCmd groups the template verbs.
type TemplateCmd struct {
	Add     TemplateAddCmd     `cmd:"" help:"Save a template that files a task at each activation of a cron spec."`
	Ls      TemplateLsCmd      `cmd:"" help:"List templates with their zone, state, last task and its outcome, and next activation (like systemctl list-timers)."`
	Rm      TemplateRmCmd      `cmd:"" help:"Retire a template."`
	Disable TemplateDisableCmd `cmd:"" help:"Stop a template firing (it stays listed; enable resumes it)."`
	Enable  TemplateEnableCmd  `cmd:"" help:"Resume a disabled template from now: what it missed meanwhile never fires."`
	Run     TemplateRunCmd     `cmd:"" help:"File one activation of a template now (like systemctl start); prints the task's id."`
	Next    TemplateNextCmd    `cmd:"" help:"The next activations of a template or spec, under roster's time rules."`
}

// TemplateAddCmd is `roster-task template add`.
type TemplateAddCmd struct {
	Worker   string   `arg:"" help:"The worker."`
	ID       string   `arg:"" help:"The template's id (a lower-case letter, then a-z 0-9 _ -)."`
	Text     []string `arg:"" help:"The text of the tasks it files; \"-\" reads it from stdin."`
	Cron     string   `required:"" help:"Five cron fields or @hourly, @daily, @every DUR...; CRON_TZ=Zone prefix allowed." placeholder:"SPEC"`
	Window   string   `help:"Skip an activation that cannot fire within DUR of its time (default: no bound)." placeholder:"DUR"`
	CatchUp  string   `name:"catch-up" help:"After downtime: latest (fire the latest missed) or none." enum:"latest,none" default:"latest"`
	Overlap  string   `help:"forbid (skip while a task of it is pending or claimed) or allow." enum:"forbid,allow" default:"forbid"`
	Ceiling  string   `help:"Wall-clock limit of its runs (default: org.toml [ceilings] recurring)." placeholder:"DUR"`
	Standing string   `help:"proactive (default) or owner." enum:"owner,proactive" default:"proactive"`
	Priority int      `help:"Priority of the tasks it files." default:"0"`
	Retries  int      `help:"Each task it files is retried up to N times when its run is attested failed (as add --retries)." placeholder:"N" default:"0"`
	Channel  string   `help:"The conversation its tasks belong to." placeholder:"CHAN"`
}

func (c *TemplateAddCmd) Run(g *cli.Globals, env *cli.Env) error {
	p, err := openPartition(g, c.Worker)
	if err != nil {
		return err
	}
	text, err := readText(c.Text, env.Stdin)
	if err != nil {
		return err
	}
	t, err := p.AddTemplate(env.Ctx, tms.NewTemplate{ID: c.ID, Cron: c.Cron, Text: text, Standing: c.Standing,
		Window: c.Window, CatchUp: c.CatchUp, Overlap: c.Overlap, Ceiling: c.Ceiling, Priority: c.Priority, Retries: c.Retries, Channel: c.Channel})
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, t.ID)
	return nil
}

type templateJSON struct {
	Worker string `json:"worker"`
	tms.Template
	Zone  string     `json:"zone"` // the zone its spec is read in: its CRON_TZ, else the host zone
	Next  *time.Time `json:"next,omitempty"`
	State string     `json:"state"` // enabled | disabled
}

// lastOf is a template's LAST column: when its last task fired and how it
// stands (a live task's state from tasks.json, else how it finished).
func lastOf(f *tms.File, t tms.Template, zone *time.Location) string {
	l := t.Last
	if l == nil {
		return "-"
	}
	state := l.State
	if live := f.Task(l.Task); live != nil {
		state = live.State
	}
	return fmtTime(&l.At, zone) + " " + state
}

// TemplateLsCmd is `roster-task template ls`.
type TemplateLsCmd struct {
	Worker string `arg:"" optional:"" help:"Only this worker (default: every worker)."`
	JSON   bool   `name:"json" help:"Print JSON Lines."`
}

func (c *TemplateLsCmd) Run(g *cli.Globals, env *cli.Env) error {
	var rows [][]string
	err := eachWorker(g, env, c.Worker, func(p *tms.Partition) error {
		f, err := p.Read(env.Ctx)
		if err != nil {
			return err
		}
		now, zone := p.Now(), p.Zone()
		for _, t := range f.Templates {
			var next *time.Time
			zoneName := zone.String()
			if acts, s, err := tms.PreviewTemplate(t.Cron, laterOf(now, t.Cursor), 1, zone); err == nil {
				zoneName = s.Location().String()
				if len(acts) > 0 && !t.Disabled {
					n := acts[0].At
					next = &n
				}
			}
			state := "enabled"
			if t.Disabled {
				state = "disabled"
			}
			if c.JSON {
				if err := cli.JSONLine(env.Stdout, templateJSON{Worker: p.Name, Template: t, Zone: zoneName, Next: next, State: state}); err != nil {
					return err
				}
				continue
			}
			id := t.ID
			if t.System {
				id += " (system)"
			}
			nextCol := fmtTime(next, zone)
			if t.Disabled {
				nextCol = "-"
			}
			rows = append(rows, []string{p.Name, id, t.Cron, zoneName, state, lastOf(f, t, zone), nextCol,
				t.Standing, t.Overlap, t.CatchUp, t.Window, fmtTime(t.Cursor, zone), firstLine(t.Text, 40)})
		}
		return nil
	})
	if !c.JSON && (c.Worker == "" || err == nil) { // the one worker asked for refused: no empty table
		if terr := cli.Table(env.Stdout, []string{"WORKER", "ID", "CRON", "ZONE", "STATE", "LAST", "NEXT", "STANDING", "OVERLAP", "CATCH-UP", "WINDOW", "CURSOR", "TEXT"}, rows); terr != nil && err == nil {
			err = terr
		}
	}
	return err
}

func laterOf(now time.Time, c *time.Time) time.Time {
	if c != nil && c.After(now) {
		return *c
	}
	return now
}

// TemplateRmCmd is `roster-task template rm`.
type TemplateRmCmd struct {
	Worker string `arg:"" help:"The worker."`
	ID     string `arg:"" help:"The template's id."`
}

func (c *TemplateRmCmd) Run(g *cli.Globals, env *cli.Env) error {
	p, err := openPartition(g, c.Worker)
	if err != nil {
		return err
	}
	return p.RemoveTemplate(env.Ctx, c.ID, tms.ByOwner)
}

// TemplateDisableCmd is `roster-task template disable`.
type TemplateDisableCmd struct {
	Worker string `arg:"" help:"The worker."`
	ID     string `arg:"" help:"The template's id."`
}

func (c *TemplateDisableCmd) Run(g *cli.Globals, env *cli.Env) error {
	return enableTemplate(g, env, c.Worker, c.ID, false)
}

// TemplateEnableCmd is `roster-task template enable`.
type TemplateEnableCmd struct {
	Worker string `arg:"" help:"The worker."`
	ID     string `arg:"" help:"The template's id."`
}

func (c *TemplateEnableCmd) Run(g *cli.Globals, env *cli.Env) error {
	return enableTemplate(g, env, c.Worker, c.ID, true)
}

func enableTemplate(g *cli.Globals, env *cli.Env, worker, id string, on bool) error {
	p, err := openPartition(g, worker)
	if err != nil {
		return err
	}
	changed, err := p.EnableTemplate(env.Ctx, id, on, tms.ByOwner)
	if err != nil {
		return err
	}
	if !changed {
		what := "disabled"
		if on {
			what = "enabled"
		}
		env.Note("template %s is already %s; nothing changed", id, what)
	}
	return nil
}

// TemplateRunCmd is `roster-task template run`.
type TemplateRunCmd struct {
	Worker string `arg:"" help:"The worker."`
	ID     string `arg:"" help:"The template's id."`
}

func (c *TemplateRunCmd) Run(g *cli.Globals, env *cli.Env) error {
	p, err := openPartition(g, c.Worker)
	if err != nil {
		return err
	}
	task, err := p.RunTemplate(env.Ctx, c.ID, tms.ByOwner)
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, task.ID)
	return nil
}

// TemplateNextCmd is `roster-task template next`.
type TemplateNextCmd struct {
	Worker string `arg:"" optional:"" help:"The worker whose template to preview."`
	ID     string `arg:"" optional:"" help:"The template's id."`
	Cron   string `help:"Preview this spec instead of a saved template." placeholder:"SPEC"`
	After  string `help:"Start after TIME (RFC 3339, \"YYYY-MM-DD HH:MM\" local, +DUR; default: now)." placeholder:"TIME"`
	N      int    `name:"count" short:"n" help:"How many activations." default:"5"`
	JSON   bool   `name:"json" help:"Print JSON Lines."`
}

func (c *TemplateNextCmd) Run(g *cli.Globals, env *cli.Env) error {
	spec := c.Cron
	now := time.Now()
	var zone *time.Location
	switch {
	case spec != "" && (c.Worker != "" || c.ID != ""):
		return errs.New(errs.ErrUsage, "give either WORKER ID or --cron SPEC, not both")
	case spec == "" && (c.Worker == "" || c.ID == ""):
		return errs.New(errs.ErrUsage, "give WORKER ID (a saved template) or --cron SPEC")
	case spec != "":
		// A spec not yet saved: the home's zone where there is a home,
		// else the system zone.
		zone = config.SystemZone()
		if h, err := g.OpenHome(); err == nil {
			org, err := config.LoadOrg(h)
			if err != nil {
				return err
			}
			zone = org.Zone()
		}
	default:
		p, err := openPartition(g, c.Worker)
		if err != nil {
			return err
		}
		zone = p.Zone()
		f, err := p.Read(env.Ctx)
		if err != nil {
			return err
		}
		t := f.Template(c.ID)
		if t == nil {
			return errs.New(errs.ErrNotFound, fmt.Sprintf("template %s: not found in worker %s", c.ID, c.Worker))
		}
		spec = t.Cron
	}
	after := now
	if c.After != "" {
		a, err := tms.ParseAt(c.After, now, zone)
		if err != nil { // ParseAt words its errors for --at
			return errs.New(errs.ErrUsage, strings.Replace(err.Error(), "--at", "--after", 1))
		}
		after = a
	}
	if c.N < 1 || c.N > 10000 {
		return errs.New(errs.ErrUsage, "-n must be between 1 and 10000")
	}
	acts, s, err := tms.PreviewTemplate(spec, after, c.N, zone)
	if err != nil {
		return err
	}
	var rows [][]string
	for _, a := range acts {
		if c.JSON {
			if err := cli.JSONLine(env.Stdout, map[string]any{"at": a.At, "local": a.Local.Format(time.RFC3339), "zone": a.Local.Format("MST"), "mark": a.Mark}); err != nil {
				return err
			}
			continue
		}
		rows = append(rows, []string{a.Local.Format("Mon 2006-01-02 15:04:05 MST"), a.At.Format("2006-01-02 15:04:05Z"), markText(a.Mark)})
	}
	if c.JSON {
		return nil
	}
	env.Note("times are in %s", s.Location())
	return cli.Table(env.Stdout, []string{"LOCAL", "UTC", "NOTE"}, rows)
}

func markText(m string) string {
	switch m {
	case "gap":
		return "gap: the wall time does not exist; fires right after the jump"
	case "overlap-first":
		return "overlap: first of two occurrences"
	case "overlap-repeat":
		return "overlap: second occurrence (elapsed-time spec)"
	}
	return ""
}
