package box

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roster-sh/roster/lib/chat"
	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
	"github.com/roster-sh/roster/lib/repos"
	"github.com/roster-sh/roster/lib/snap"
	"github.com/roster-sh/roster/lib/suite"
	"github.com/roster-sh/roster/lib/tms"
)

// Request is one `roster-box run` as asked: a dispatched run (Task and
// Run, both set) or an ad-hoc one (the rest).
type Request struct {
	Home      home.Home
	Worker    string
	Task, Run string // dispatched: the claimed task and the run it is claimed for

	// Spec is Worker's spec, when the caller has loaded it for the run
	// already (roster-box run, for its host cgroup); nil: Prepare loads it.
	Spec *config.Worker

	Ceiling *time.Duration // ad hoc: the wall-clock limit (nil: org.toml's adhoc)
	Channel *string        // ad hoc: the channel whose store to mount
	Clean   bool           // ad hoc: no channel store, no task or schedule in the briefing
	Command []string       // ad hoc: instead of the spec's command
}

// Dispatched reports whether r is the dispatcher's run of a claimed task.
func (r Request) Dispatched() bool { return r.Task != "" || r.Run != "" }

// NewRunID makes an ad-hoc run's id (a variable: tests make it clash).
var NewRunID = home.NewRunID

// Prepare resolves r into the supervision of one run: the worker's spec
// and the org's settings (checked against each other), the task, the run
// id, the ceiling, the channel store (made if missing, owned by the box
// user), the suite's tools, the gateway, the briefing's input and the
// snapshot step. It creates nothing else: the run folder is the caller's
// to make (CreateRunDir), last.
//
// The spec and org.toml are read once (the spec not at all when r
// carries it) and passed down to everything the run sets up, the
// partition, the gateway, its git service and the agent, so one run sees
// one configuration even if a file changes while it starts.
func Prepare(ctx context.Context, r Request) (*Supervision, error) {
	h := r.Home
	part, err := openRun(r)
	if err != nil {
		return nil, err
	}
	spec, org := part.Spec, part.Org
	sup := &Supervision{Part: part, Idle: spec.Idle, Kind: "adhoc", OnFailure: org.Notify.OnFailure, FinalOnly: org.Notify.FinalOnly, Home: h.Dir, Warnings: spec.Warnings}
	run, channel, err := sup.runOf(ctx, r)
	if err != nil {
		return nil, err
	}
	s := boxSpec(r, spec, h.Worker(r.Worker), run, channel)
	sup.Spec = s
	if sup.Task != nil {
		s.Task = sup.Task.ID
	}
	if s.Network == "gateway" {
		s.Knowledge = knowledgeAccess(channel, sup.Task)
		var genv []string
		sup.Gateway, genv = runGateway(part, s, sup.Task, time.Now())
		s.Env = append(s.Env, genv...)
		s.GitConfig = GitConfig(spec, s.Knowledge != "")
		mark(ctx, "gateway configured")
	}
	if spec.Agent != "" && len(r.Command) == 0 {
		if sup.Agent, err = prepareAgent(spec, org, s); err != nil {
			return nil, err
		}
	}
	passEnv(s, spec, r.Dispatched())
	if channel != "" {
		w := h.Worker(r.Worker)
		if s.ChannelStore, err = channelStore(w, channel, spec.UID); err != nil {
			return nil, err
		}
		if s.ChannelLog, err = chat.LogForBox(w, channel); err != nil {
			return nil, err
		}
	}
	sup.Briefing = BriefingInput{Worker: r.Worker, Role: spec.Role, Run: run, Task: sup.Task, Channel: channel, Clean: r.Clean, Repos: spec.Repos, Knowledge: s.Knowledge, Now: time.Now()}
	if sup.Live != nil {
		sup.Briefing.Live, sup.Briefing.Recent = true, liveRecent(sup)
	}
	if !r.Clean {
		if f, err := part.Read(ctx); err == nil {
			sup.Briefing.Schedule = f
		}
	}
	if snap, err := suite.Find("roster-snap"); err == nil {
		sup.Snapshot = func(ctx context.Context) string { return snapshot(ctx, snap, h, r.Worker, s.Run) }
	}
	mark(ctx, "spec, org and partition read")
	return sup, nil
}

// openRun reads the run's configuration, once: the worker's spec (unless
// r carries it) and org.toml, checked against each other, and opens the
// partition with them. Everything the run sets up takes them from the
// partition.
func openRun(r Request) (*tms.Partition, error) {
	spec := r.Spec
	if spec == nil {
		var err error
		if spec, err = config.LoadWorker(r.Home, r.Worker); err != nil {
			return nil, err
		}
	}
	org, err := config.LoadOrg(r.Home)
	if err != nil {
		return nil, err
	}
	if err := config.CheckWorkerWithOrg(spec, org); err != nil {
		return nil, err
	}
	return tms.Open(r.Home, r.Worker, tms.Options{Org: org, Worker: spec})
}

// runOf sets what the run serves: for a dispatched run, its claimed task
// (one finished meanwhile read as ended), the task's kind, channel and
// ceiling, and a live session when the task's channel has one; for an
// ad-hoc run, a new id and its ceiling (--ceiling, or org.toml's adhoc).
// It returns the run's id and channel.
func (sup *Supervision) runOf(ctx context.Context, r Request) (run, channel string, err error) {
	part := sup.Part
	if !r.Dispatched() {
		sup.Ceiling = part.Org.Ceiling("adhoc")
		if r.Ceiling != nil {
			sup.Ceiling = *r.Ceiling
		}
		if r.Channel != nil {
			channel = *r.Channel
		}
		return NewRunID(time.Now()), channel, nil
	}
	t, err := part.Get(ctx, r.Task)
	if errors.Is(err, errs.ErrNotFound) {
		t, err = part.Show(ctx, r.Task) // finished meanwhile: recorded canceled
	}
	if err != nil {
		return "", "", err
	}
	sup.Task = &t
	sup.Kind = t.Kind
	sup.Ceiling, _ = part.RunCeiling(sup.Task, time.Now())
	if sup.Live = liveFor(part.Spec, part.Org, sup.Task); sup.Live != nil {
		// The session's whole life; each turn has the relay ceiling.
		sup.Ceiling, sup.Idle = part.Org.Ceilings.Live, 0
	}
	return r.Run, t.Channel, nil
}

// boxSpec is the box of the run as the worker's spec describes it (r's
// command instead of the spec's, if given), in the worker's folders w,
// with its connections and the suite's tools found on the host.
func boxSpec(r Request, spec *config.Worker, w home.Worker, run, channel string) *Spec {
	s := &Spec{
		Worker: r.Worker, Run: run, Channel: channel,
		UID: spec.UID, Command: spec.Command, Rootfs: spec.Rootfs, Network: spec.Network,
		Memory: spec.Memory, Pids: spec.Pids, CPUs: spec.CPUs,
		Store: w.Store(), Locks: w.Locks(), View: w.View(), Runs: w.Runs(), RunDir: w.Run(run),
		Tools: map[string]string{},
	}
	if len(r.Command) > 0 {
		s.Command = r.Command
	}
	for _, cn := range spec.Connections {
		s.Connections = append(s.Connections, Connection{Name: cn.Name, Path: cn.Path, At: cn.At, Mode: cn.Mode})
	}
	for _, t := range []string{"roster-task", "roster-lock", ReaperTool} {
		if p, err := suite.Find(t); err == nil {
			s.Tools[t] = p
		}
	}
	return s
}

// passEnv adds to the box's environment the host's values of the spec's
// pass_env (and TERM for an ad-hoc run, which has a terminal).
func passEnv(s *Spec, spec *config.Worker, dispatched bool) {
	names := spec.PassEnv
	if !dispatched {
		names = append(names, "TERM")
	}
	for _, name := range names {
		if v, ok := os.LookupEnv(name); ok {
			s.Env = append(s.Env, name+"="+v)
		}
	}
}

// Rename gives an ad-hoc run a new id (its first clashed with an existing
// run folder).
func (s *Supervision) Rename(run string) {
	s.Spec.Run, s.Spec.RunDir, s.Briefing.Run = run, s.Part.W.Run(run), run
}

// channelStore returns the channel's store, creating it owned by the box
// user (chown through the new descriptor, never a path).
func channelStore(w home.Worker, channel string, uid int) (string, error) {
	dir, err := w.ChannelStore(channel)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(w.ChannelStores(), 0o700); err != nil {
		return "", err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if os.IsExist(err) {
			return dir, nil
		}
		return "", err
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	return dir, unix.Fchown(fd, uid, uid)
}

// snapshot runs `roster-snap take W --run RUN` and says what run.json
// records: the new id, "unchanged", "store busy", "snapshots unavailable".
func snapshot(ctx context.Context, prog string, h home.Home, worker, run string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, "take", worker, "--run", run, "--home", h.Dir)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		if id := strings.TrimSpace(out.String()); id != "" {
			return id
		}
		return "unchanged"
	case errors.As(err, &ee) && ee.ExitCode() == errs.ExitBusy:
		return "store busy"
	case errors.As(err, &ee) && ctx.Err() == nil && killedBy(ee) != 0:
		// Killed before it could record its end (the OOM killer at the
		// worker's host_memory bound, a kill -9): recorded here, so the
		// worker is held as for any take its store makes fail.
		why := "roster-snap take was killed (" + killedBy(ee).String() + ")"
		if killedBy(ee) == unix.SIGKILL {
			why += "; if its worker's host_memory bound killed it, raise host_memory in the worker's spec"
		}
		if nerr := snap.NoteKilled(ctx, h.Worker(worker), why, time.Now(), 10*time.Second); nerr != nil {
			why += " (not recorded: " + nerr.Error() + ")"
		}
		return "failed: " + why
	}
	// The error's line, the last one that is not its hint.
	msg := ""
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "roster-snap: hint:") {
			msg = l
		}
	}
	if msg == "" {
		msg = err.Error()
	}
	return "failed: " + msg
}

// killedBy is the signal that killed the process ee reports, 0 if none.
func killedBy(ee *exec.ExitError) unix.Signal {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal()
	}
	return 0
}

// knowledgeAccess is a gateway run's access to its worker's knowledge repo
// (Spec.Knowledge): none without git on the host; read for a run that
// serves a channel or carries one's content (a relay, or a task filed
// from one), so what a conversation said never lands in the knowledge
// every run reads; write otherwise.
func knowledgeAccess(channel string, t *tms.Task) string {
	if _, err := repos.Find(); err != nil {
		return ""
	}
	if channel != "" || (t != nil && (t.Kind == tms.KindRelay || t.From != "")) {
		return "read"
	}
	return "write"
}
