package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/term"

	"github.com/roster-sh/roster/lib/agent"
	"github.com/roster-sh/roster/lib/cli"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/repos"
	"github.com/roster-sh/roster/lib/tms"
)

// WorkerCmd groups the worker verbs.
type WorkerCmd struct {
	Add    WorkerAddCmd    `cmd:"" help:"Add a worker: its spec workers/NAME.toml, a box uid of its own, its folders. Prints its name."`
	Ls     WorkerLsCmd     `cmd:"" help:"List the workers with uid, paused, pending and claimed counts."`
	Rm     WorkerRmCmd     `cmd:"" help:"Remove a worker's spec; its data is kept unless --purge. Refused while a box of it is live."`
	Pause  WorkerPauseCmd  `cmd:"" help:"Pause a worker: dispatch claims nothing for it."`
	Resume WorkerResumeCmd `cmd:"" help:"Resume a paused worker."`
}

// WorkerAddCmd is `worker add NAME`.
type WorkerAddCmd struct {
	Name        string   `arg:"" help:"The worker's name: a lower-case letter, then up to 62 of a-z 0-9 _ -."`
	Command     []string `name:"command" sep:"none" placeholder:"ARGV" help:"The program a run starts. Given once, it is split on white space; given several times, each is one word."`
	Heartbeat   string   `name:"heartbeat" placeholder:"DUR" help:"The heartbeat template's period, or \"off\" (default 30m)."`
	Role        string   `name:"role" placeholder:"TEXT" help:"The text that opens every briefing."`
	UID         *int     `name:"uid" placeholder:"UID" help:"The box user (and group) id; default: the lowest free one from 200000."`
	Concurrency *int     `name:"concurrency" placeholder:"N" help:"Boxes of this worker at once from dispatch (default 1)."`
	Network     string   `name:"network" placeholder:"gateway|none|host" help:"\"gateway\" (loopback and the run's gateway, the default), \"none\" (loopback only) or \"host\"."`
	Agent       string   `name:"agent" placeholder:"pi|claude" help:"Run this AI agent headless with the briefing as its prompt, instead of a command."`
	Model       string   `name:"model" placeholder:"MODEL" help:"The agent's model (default: the agent's own)."`
}

// commandArgv applies the --command rule: once = split on white space,
// several times = one word each.
func commandArgv(words []string) []string {
	if len(words) == 1 {
		return strings.Fields(words[0])
	}
	return words
}

func (c *WorkerAddCmd) Run(g *cli.Globals, env *cli.Env) error {
	if err := home.ValidWorker(c.Name); err != nil {
		return err
	}
	// A flag given is a value asked for: 0 is never "the default" here.
	uid, conc := 0, 0
	if c.UID != nil {
		if uid = *c.UID; uid < 1 {
			return errs.New(errs.ErrUsage, fmt.Sprintf("--uid %d: not a usable box user (1 to 4294967294; never 0, root)", uid))
		}
	}
	if c.Concurrency != nil {
		if conc = *c.Concurrency; conc < 1 {
			return errs.New(errs.ErrUsage, fmt.Sprintf("--concurrency %d: must be 1 or more", conc))
		}
	}
	argv := commandArgv(c.Command)
	if c.Command != nil && len(argv) == 0 {
		return errs.New(errs.ErrUsage, "--command: empty; give the program a run starts (or leave --command out)")
	}
	var ag *agent.Agent
	switch {
	case c.Agent != "" && c.Command != nil:
		return errs.New(errs.ErrUsage, "--agent and --command exclude each other: an agent worker runs its agent")
	case c.Agent != "":
		a, err := agent.For(c.Agent)
		if err != nil {
			return err
		}
		ag = a
	case c.Model != "":
		return errs.New(errs.ErrUsage, "--model is for an agent worker: give --agent pi or --agent claude")
	}
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	w, err := config.AddWorker(env.Ctx, h, config.NewWorker{
		Name: c.Name, Role: c.Role, Command: argv, Heartbeat: c.Heartbeat,
		UID: uid, Concurrency: conc, Network: c.Network, Agent: c.Agent, Model: c.Model,
	})
	if errors.Is(err, fs.ErrPermission) {
		return errs.WithHint(err, "worker add runs as root: it gives the worker's folders to its box uid")
	}
	if err != nil {
		return err
	}
	for _, m := range w.Warnings {
		env.Warn("%s", m)
	}
	if ag != nil {
		// The spec is written: a missing agent is the operator's next step,
		// not a reason to refuse (dispatch holds its tasks until then, and
		// an ad-hoc run fails with the hint).
		if _, err := agent.Find(ag, w.Rootfs); err != nil {
			env.Warn("worker %s: %v; its tasks are held until it is installed (hint: %s)", w.Name, err, errs.HintOf(err))
		}
	}
	// The heartbeat is the host's from the spec: the partition holds it
	// from the start, not from the dispatcher's first tick.
	if err := syncHeartbeat(env, h, w); err != nil {
		env.Warn("worker %s added, but its heartbeat template is not written yet (the dispatcher writes it): %v", w.Name, err)
	}
	if err := repos.MakeWorkerKnowledge(env.Ctx, h.Worker(w.Name).Knowledge(), w.Name); err != nil {
		env.Warn("worker %s added, but its knowledge repo is not made yet (its first run makes it): %v", w.Name, err)
	}
	fmt.Fprintln(env.Stdout, w.Name)
	return nil
}

func syncHeartbeat(env *cli.Env, h home.Home, w *config.Worker) error {
	p, err := tms.Open(h, w.Name, tms.Options{Worker: w})
	if err != nil {
		return err
	}
	return p.SyncHeartbeat(env.Ctx)
}

// WorkerLsCmd is `worker ls`.
type WorkerLsCmd struct {
	JSON bool `name:"json" help:"Print one JSON object per worker (JSON Lines)."`
}

// workerRow is one line of `worker ls`; its JSON form is a stable contract.
type workerRow struct {
	Name    string `json:"name"`
	UID     int    `json:"uid"`
	Paused  bool   `json:"paused"`
	Pending int    `json:"pending"`
	Claimed int    `json:"claimed"`
	Held    string `json:"held,omitempty"` // why dispatch claims nothing for it (its spec, store.max), if so
	Error   string `json:"error,omitempty"`
	err     error  // Error's error
}

func (c *WorkerLsCmd) Run(g *cli.Globals, env *cli.Env) error {
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	names, err := config.ListWorkers(h)
	if err != nil {
		return err
	}
	org, err := config.LoadOrg(h) // a broken org.toml is refused, as by every command
	if err != nil {
		return err
	}
	specs, specErrs := config.LoadWorkers(h, names) // each spec read once, not once per other worker
	rows := make([]workerRow, len(names))
	warns := make([][]string, len(names))
	fsx.Each(len(names), func(i int) { // at 10,000 workers the reads are the time
		rows[i], warns[i] = lsRow(env.Ctx, h, org, names[i], specs[i], specErrs[i])
	})
	for _, ws := range warns {
		for _, m := range ws {
			env.Warn("%s", m)
		}
	}
	if c.JSON {
		for _, r := range rows {
			if err := cli.JSONLine(env.Stdout, r); err != nil {
				return err
			}
		}
		return lsFailures(env, rows)
	}
	table := make([][]string, 0, len(rows))
	for _, r := range rows {
		if r.Error != "" {
			table = append(table, []string{r.Name, "-", "-", "-", "-", "-"}) // why: the error below
			continue
		}
		held := "-"
		if r.Held != "" {
			held = r.Held
		}
		table = append(table, []string{r.Name, strconv.Itoa(r.UID), yesNo(r.Paused),
			strconv.Itoa(r.Pending), strconv.Itoa(r.Claimed), held})
	}
	if err := cli.Table(env.Stdout, []string{"NAME", "UID", "PAUSED", "PENDING", "CLAIMED", "HELD"}, table); err != nil {
		return err
	}
	return lsFailures(env, rows)
}

// lsFailures reports each worker whose spec or partition could not be
// read, as every command that reads one refuses it (exit 14 for
// unreadable data), after listing the others.
func lsFailures(env *cli.Env, rows []workerRow) error {
	var fails cli.Failures
	for _, r := range rows {
		if r.err != nil {
			fails.Report(env, r.err)
		}
	}
	return fails.Exit()
}

// lsRow is worker name's line of `worker ls` and the warnings to print
// for it; r.Error says why its spec or partition could not be read.
func lsRow(ctx context.Context, h home.Home, org *config.Org, name string, w *config.Worker, err error) (workerRow, []string) {
	r := workerRow{Name: name}
	var warns []string
	if err == nil {
		if n := len(w.Warnings); n > 0 { // said whole by roster doctor, and by add and edit
			warns = append(warns, fmt.Sprintf("worker %s: %s in its spec (roster doctor lists them)", name, countOf(n, "config warning")))
		}
		r.UID, r.Paused, r.Held = w.UID, w.Paused, tms.SpecHold(w)
		if r.Held == "" {
			r.Held = tms.StoreHold(ctx, h.Worker(name), org)
		}
		r.Pending, r.Claimed, err = countTasks(h.Worker(name))
	}
	if err != nil {
		r.Error, r.err = err.Error(), err // said after the table, and the exit says it (14 for unreadable data)
	}
	return r, warns
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// countTasks counts the pending and claimed tasks of a worker's
// partition, read as tms reads it (a missing one is empty; an unreadable
// one is refused, exit 14).
func countTasks(w home.Worker) (pending, claimed int, err error) {
	f, err := tms.ReadFile(w)
	if err != nil {
		return 0, 0, err
	}
	for _, t := range f.Tasks {
		switch t.State {
		case tms.Pending:
			pending++
		case tms.Claimed:
			claimed++
		}
	}
	return pending, claimed, nil
}

// WorkerRmCmd is `worker rm NAME`.
type WorkerRmCmd struct {
	Name  string `arg:"" help:"The worker to remove."`
	Purge bool   `name:"purge" help:"Also delete its folder in the data tree: store, snapshots, tasks, journal, runs (lists what it deletes; asks first on a terminal)."`
	Yes   bool   `short:"y" name:"yes" help:"With --purge: do not ask, even on a terminal."`
}

func (c *WorkerRmCmd) Run(g *cli.Globals, env *cli.Env) error {
	if err := home.ValidWorker(c.Name); err != nil {
		return err
	}
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	if _, err := os.Lstat(h.SpecFile(c.Name)); err != nil {
		return config.RemoveWorker(h, c.Name, c.Purge) // its error names the way forward
	}
	open := openWork(env, h, c.Name)
	var parts []purgePart
	if c.Purge {
		parts = purgeParts(h.Worker(c.Name).Dir)
		if f, ok := env.Stdin.(*os.File); ok && !c.Yes && term.IsTerminal(int(f.Fd())) {
			fmt.Fprintf(env.Stderr, "roster-task: worker %s: delete %s (%s)?%s [y/N] ", c.Name, h.Worker(c.Name).Dir, summary(parts), open)
			ans, _ := bufio.NewReader(f).ReadString('\n')
			if a := strings.ToLower(strings.TrimSpace(ans)); a != "y" && a != "yes" {
				env.Note("worker %s left as it was", c.Name)
				return &errs.Exit{Code: 1}
			}
		}
	}
	if err := config.RemoveWorker(h, c.Name, c.Purge); err != nil {
		return err
	}
	if !c.Purge {
		if open != "" {
			env.Note("worker %s removed;%s kept in %s: a later `roster worker add %s` finds them", c.Name, open, h.Worker(c.Name).Dir, c.Name)
		}
		return nil
	}
	for _, p := range parts {
		fmt.Fprintf(env.Stdout, "deleted %s\t%d files\t%d bytes\n", p.path, p.files, p.bytes)
	}
	if open != "" {
		env.Note("worker %s purged;%s deleted with it", c.Name, open)
	}
	return nil
}

// openWork says what open work a worker has (" 2 pending tasks and 1
// template"), "" for none or when its partition cannot be read.
func openWork(env *cli.Env, h home.Home, name string) string {
	p, err := tms.Open(h, name, tms.Options{})
	if err != nil {
		return ""
	}
	f, err := p.Read(env.Ctx)
	if err != nil {
		return ""
	}
	tasks, tpls := 0, 0
	for _, t := range f.Tasks {
		if t.State == tms.Pending || t.State == tms.NeedsReview {
			tasks++
		}
	}
	for _, t := range f.Templates {
		if !t.System {
			tpls++
		}
	}
	var say []string
	if tasks > 0 {
		say = append(say, plural(tasks, "pending task"))
	}
	if tpls > 0 {
		say = append(say, plural(tpls, "template"))
	}
	if len(say) == 0 {
		return ""
	}
	return " its " + strings.Join(say, " and ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// purgePart is one entry of a worker's data folder and what it holds.
type purgePart struct {
	path         string
	files, bytes int64
}

// purgeParts lists the entries of dir with their file counts and sizes
// (links are counted, never followed).
func purgeParts(dir string) []purgePart {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []purgePart
	for _, e := range ents {
		p := purgePart{path: filepath.Join(dir, e.Name())}
		filepath.WalkDir(p.path, func(_ string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			p.files++
			if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
				p.bytes += fi.Size()
			}
			return nil
		})
		out = append(out, p)
	}
	return out
}

func summary(parts []purgePart) string {
	var files, bytes int64
	for _, p := range parts {
		files, bytes = files+p.files, bytes+p.bytes
	}
	return fmt.Sprintf("%d files, %d bytes", files, bytes)
}

// WorkerPauseCmd is `worker pause NAME`.
type WorkerPauseCmd struct {
	Name string `arg:"" help:"The worker to pause."`
}

func (c *WorkerPauseCmd) Run(g *cli.Globals, env *cli.Env) error { return setPaused(g, c.Name, true) }

// WorkerResumeCmd is `worker resume NAME`.
type WorkerResumeCmd struct {
	Name string `arg:"" help:"The worker to resume."`
}

func (c *WorkerResumeCmd) Run(g *cli.Globals, env *cli.Env) error {
	return setPaused(g, c.Name, false)
}

func setPaused(g *cli.Globals, name string, paused bool) error {
	if err := home.ValidWorker(name); err != nil {
		return err
	}
	h, err := g.OpenHome()
	if err != nil {
		return err
	}
	return config.SetPaused(h, name, paused)
}
