package repos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/runs"
)

// Outcomes of one pushed ref (the ledger's and run.json's).
const (
	Pushed           = "pushed"
	Gated            = "gated"
	Refused          = "refused"
	UpstreamRejected = "upstream_rejected"
)

// PushResult is what one receive-pack request did.
type PushResult struct {
	Refs    []RefResult
	Refusal string // the first refusal's kind ("" = none)
}

// RefResult is one ref command's end (the ledger's and run.json's form).
type RefResult = runs.GitRef

// ReceivePack serves a push (body decompressed) to repo name: the ref
// rules first, on the commands alone (a refusal then runs no git at all
// and takes in no object); then git receive-pack into its quarantine,
// where roster's hook hands the updates to the judge (fast-forwards, the
// content rules, the upstream's own verdict) before any ref moves. A
// host repo's protected ref is received into refs/roster/pending/... and
// held for review (Service.Gate). git answers roster, not the client:
// roster writes the client's report itself, each refusal as "ng REF
// roster: KIND: reason" and its messages on side band 2. Each push's
// outcome goes to Service.Journal.
func (s *Service) ReceivePack(ctx context.Context, name string, body io.Reader, w io.Writer) (*PushResult, error) {
	res, err := s.receivePack(ctx, name, body, w)
	if res != nil && len(res.Refs) > 0 && s.Journal != nil {
		refs := append([]RefResult(nil), res.Refs...)
		for i := range refs {
			refs[i].Repo = name
		}
		s.Journal(ctx, refs)
	}
	return res, err
}

func (s *Service) receivePack(ctx context.Context, name string, body io.Reader, w io.Writer) (*PushResult, error) {
	r, err := s.Grant(name)
	if err != nil {
		return nil, err
	}
	dir, err := s.servedDir(ctx, r)
	if err != nil {
		return nil, err
	}
	br := bufReader(body)
	p, err := ReadPush(br)
	if err != nil {
		return nil, err
	}
	res := &PushResult{}
	if len(p.Commands) == 0 && !p.Cert {
		return res, nil // git's probe before a chunked push: nothing to answer
	}
	vs := s.preJudge(r, dir, p)
	if refused(vs) {
		res.set(vs, Refused)
		return res, writeReport(w, p, "ok", vs, nil)
	}
	unlock, err := s.flock(ctx, r)
	if err != nil {
		return nil, err
	}
	defer unlock()
	j := &judgeRun{s: s, r: r, dir: dir, push: p, sent: gatedCommands(p.Commands, vs, s.Run)}
	out, err := s.receive(ctx, j, p, br)
	if err != nil {
		return nil, err
	}
	if j.verdicts == nil { // git ended before its hook ran: a bad pack, or over max_push
		kind, msg := "bad_pack", firstLine(out.stderr)
		if strings.Contains(out.stderr, "maximum allowed size") {
			kind, msg = RefusePushTooLarge, fmt.Sprintf("the push is over max_push (%s)", config.FormatSize(r.MaxPush))
		}
		all := make([]Verdict, len(p.Commands))
		for i, c := range p.Commands {
			all[i] = Verdict{Command: c, Kind: kind, Reason: msg}
		}
		res.set(all, Refused)
		return res, writeReport(w, p, out.unpack, all, out.messages)
	}
	outcome := Pushed
	if !j.ok {
		outcome = Refused
		if j.upstream {
			outcome = UpstreamRejected
		}
	}
	msgs := out.messages
	if j.ok && s.isKnowledge(r) {
		s.landedMain(ctx, dir, p.Commands)
	} else if j.ok {
		s.recordOwn(r, p.Commands)
		msgs = append(msgs, j.gateMsgs...)
	}
	res.set(j.verdicts, outcome)
	return res, writeReport(w, p, out.unpack, j.verdicts, msgs)
}

func refused(vs []Verdict) bool {
	for _, v := range vs {
		if !v.OK() {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return clip(l, 300)
}

func (res *PushResult) set(vs []Verdict, outcome string) {
	for _, v := range vs {
		o := outcome
		switch {
		case !v.OK():
			o = Refused
			if outcome == UpstreamRejected {
				o = UpstreamRejected
			}
		case v.Gate:
			o = Gated
		}
		if res.Refusal == "" && v.Kind != "" && v.Kind != RefuseAtomic {
			res.Refusal = v.Kind
		}
		res.Refs = append(res.Refs, RefResult{Ref: v.Ref, Old: v.Old, New: v.New, Outcome: o, Refusal: v.Kind})
	}
}

// preJudge judges what the commands alone decide: a push certificate, a
// shallow push, the ref rules but fast-forwards.
func (s *Service) preJudge(r config.Repo, dir string, p *Push) []Verdict {
	all := func(kind, reason string) []Verdict {
		vs := make([]Verdict, len(p.Commands))
		for i, c := range p.Commands {
			vs[i] = Verdict{Command: c, Kind: kind, Reason: reason}
		}
		return vs
	}
	switch {
	case p.Cert:
		return []Verdict{{Command: Command{Ref: "push-cert"}, Kind: RefusePushCert, Reason: "signed pushes are refused (sign commits instead)"}}
	case p.Shallow:
		return all(RefuseShallow, "a push from a shallow clone is refused: fetch --unshallow first")
	}
	return JudgeRefs(s.policy(r, dir), p.Commands, func(string, string) bool { return true })
}

// policy is r's ref policy for this worker: its grant, with the
// upstream's HEAD branch protected too (the mirror's HEAD points at it).
func (s *Service) policy(r config.Repo, dir string) Policy {
	if s.isKnowledge(r) {
		runBranch := KnowledgeRunPrefix + s.Run
		return Policy{Push: r.Push, Force: "own", ReadOnly: s.Knowledge.ReadOnly,
			Own: func(b string) bool { return b == runBranch }}
	}
	own := s.readOwn(r)
	protect := r.Protect
	if head := headBranch(dir); head != "" && !Match(protect, head) {
		protect = append(append([]string(nil), protect...), head)
	}
	return Policy{Push: r.Push, Protect: protect, Force: r.Force, Gate: r.Host() && s.Gate != nil,
		Own: func(b string) bool { return own[b] }}
}

// headBranch is the branch a bare repo's HEAD names ("" if none).
func headBranch(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, "HEAD"))
	if err != nil {
		return ""
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "ref: refs/heads/")
	if !ok || validRefPart(ref) != nil {
		return ""
	}
	return ref
}

// flock holds data/workers/W/repos/NAME.lock: one refresh, push or gate
// landing at a time per repo and worker, across its runs (a flock per
// open file: two requests of one gateway exclude each other too).
func (s *Service) flock(ctx context.Context, r config.Repo) (func(), error) {
	l, err := fsx.LockPath(ctx, filepath.Join(s.Dir, r.Name+".lock"), false, fsx.Forever)
	if err != nil {
		return nil, err
	}
	return func() { l.Unlock() }, nil
}

// gitOut is what git receive-pack said: its report's unpack status, and
// its stderr (the hook's "roster: ..." lines among it).
type gitOut struct {
	unpack   string
	stderr   string
	messages []string
}

// receive runs git receive-pack on the request as roster sends it (the
// commands j.sent, no side band: the report comes back to roster), then
// the rest of the body, with the judge on a socket pair.
func (s *Service) receive(ctx context.Context, j *judgeRun, p *Push, rest io.Reader) (*gitOut, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "judge"), os.NewFile(uintptr(fds[1]), "judge-hook")
	defer ours.Close()
	conn, err := net.FileConn(ours)
	if err != nil {
		theirs.Close()
		return nil, err
	}
	defer conn.Close()
	extra := []string{
		"-c", "receive.maxInputSize=" + strconv.FormatInt(j.r.MaxPush, 10),
		"-c", "receive.denyDeletes=" + strconv.FormatBool(!hasDelete(p.Commands)),
		"-c", "receive.denyNonFastForwards=false", // the judge decides (force on own branches)
		"-c", "receive.denyCurrentBranch=refuse",
		"-c", "receive.certNonceSeed=",
		"-c", "receive.advertisePushOptions=false",
		"-c", "receive.unpackLimit=1", // always a kept pack in the quarantine: nothing loose to chase
	}
	cmd := s.Git.Cmd(ctx, j.dir, extra, []string{JudgeFDEnv + "=3"}, "receive-pack", "--stateless-rpc", j.dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdin = io.MultiReader(bytes.NewReader(requestHead(p, j.sent)), rest)
	cmd.Stdout, cmd.Stderr = &limited{b: &stdout, n: 1 << 20}, &limited{b: &stderr, n: 64 << 10}
	cmd.ExtraFiles = []*os.File{theirs}
	if err := cmd.Start(); err != nil {
		theirs.Close()
		return nil, err
	}
	theirs.Close()
	done := make(chan struct{})
	go func() { defer close(done); j.serve(ctx, conn) }()
	err = cmd.Wait()
	conn.Close()
	<-done
	out := &gitOut{unpack: reportUnpack(stdout.Bytes()), stderr: stderr.String()}
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.HasPrefix(l, "roster: ") {
			out.messages = append(out.messages, strings.TrimPrefix(l, "roster: "))
		}
	}
	if err != nil && j.verdicts == nil && out.unpack == "" {
		return nil, fmt.Errorf("receive-pack: %v: %s", err, clip(stderr.String(), 400))
	}
	return out, nil
}

// limited keeps at most n bytes of what is written to it.
type limited struct {
	b *bytes.Buffer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// requestHead is the request's commands as roster hands them to git:
// cmds (a gated ref's renamed to its pending ref), the client's
// capabilities without the side bands and with report-status, then the
// push options as sent.
func requestHead(p *Push, cmds []Command) []byte {
	var caps []string
	for _, c := range p.Caps {
		if c != "side-band-64k" && c != "side-band" && c != "report-status" && c != "report-status-v2" && c != "quiet" {
			caps = append(caps, c)
		}
	}
	caps = append(caps, "report-status", "quiet")
	var b bytes.Buffer
	for i, c := range cmds {
		line := c.Old + " " + c.New + " " + c.Ref
		if i == 0 {
			line += "\x00" + strings.Join(caps, " ")
		}
		b.Write(Pkt(line + "\n"))
	}
	b.Write(Flush)
	if p.Has("push-options") {
		for _, o := range p.Options {
			b.Write(Pkt(o + "\n"))
		}
		b.Write(Flush)
	}
	return b.Bytes()
}

// reportUnpack reads the unpack status from git's report ("ok", or git's
// error; "" when it wrote none).
func reportUnpack(out []byte) string {
	br := bufReader(bytes.NewReader(out))
	payload, flush, err := readPkt(br)
	if err != nil || flush {
		return ""
	}
	st, ok := strings.CutPrefix(strings.TrimSuffix(string(payload), "\n"), "unpack ")
	if !ok {
		return ""
	}
	return st
}

func onlyDeletes(cmds []Command) bool {
	for _, c := range cmds {
		if !c.Delete() {
			return false
		}
	}
	return true
}

func hasDelete(cmds []Command) bool {
	for _, c := range cmds {
		if c.Delete() {
			return true
		}
	}
	return false
}

// judgeRun is one push's judge, answering its hook once.
type judgeRun struct {
	s        *Service
	r        config.Repo
	dir      string
	push     *Push
	sent     []Command // the commands as git got them (a gated ref renamed)
	verdicts []Verdict
	ok       bool
	upstream bool     // the upstream refused it
	gateMsgs []string // what the gates it opened tell the client
}

func (j *judgeRun) serve(ctx context.Context, conn net.Conn) {
	var req hookRequest
	if err := json.NewDecoder(conn).Decode(&req); err != nil {
		return // git ended before its hook ran
	}
	ans := j.judge(ctx, req)
	_ = json.NewEncoder(conn).Encode(ans)
}

// judge is the verdict on a push whose objects are in git's quarantine.
func (j *judgeRun) judge(ctx context.Context, req hookRequest) hookAnswer {
	qenv, err := j.quarantine(req.Env)
	if err != nil || !sameCommands(req.Commands, j.sent) {
		j.verdicts = JudgeRefs(Policy{ReadOnly: true}, j.push.Commands, nil)
		return hookAnswer{Lines: []string{"bad_request: the hook's view of the push does not match the request"}}
	}
	ff := func(old, new string) bool {
		_, err := j.s.Git.Run(ctx, j.dir, qenv, "merge-base", "--is-ancestor", old, new)
		return err == nil
	}
	j.verdicts = JudgeRefs(j.s.policy(j.r, j.dir), j.push.Commands, ff)
	if lines := refusedLines(j.verdicts); lines != nil {
		return hookAnswer{Lines: lines}
	}
	if lines := j.stale(ctx); lines != nil {
		return hookAnswer{Lines: lines}
	}
	if kind, msg := j.s.checkContent(ctx, j.r, j.dir, qenv, j.push.Commands); kind != "" {
		for i := range j.verdicts {
			j.verdicts[i].Kind, j.verdicts[i].Reason = kind, msg
		}
		return hookAnswer{Lines: []string{kind + ": " + msg}}
	}
	if !j.r.Host() {
		if msg, err := j.s.pushUpstream(ctx, j.r, j.dir, qenv, j.push.Commands); err != nil {
			j.upstream = true
			for i := range j.verdicts {
				j.verdicts[i].Kind, j.verdicts[i].Reason = RefuseUpstream, msg
			}
			return hookAnswer{Lines: []string{RefuseUpstream + ": the upstream refused the push: " + msg}}
		}
	} else if !j.s.isKnowledge(j.r) {
		msgs, refusal := j.openGates(ctx, qenv)
		if refusal != "" {
			for i := range j.verdicts {
				j.verdicts[i].Gate, j.verdicts[i].Kind, j.verdicts[i].Reason = false, "gate_failed", refusal
			}
			return hookAnswer{Lines: []string{"gate_failed: " + refusal}}
		}
		j.gateMsgs = msgs
	}
	j.ok = true
	return hookAnswer{OK: true}
}

// stale refuses the push when a ref it updates moved since the client
// read it (another run's push landed first; the repo's lock is held, so
// nothing moves it now): git's own "fetch first", as a refusal the client
// prints. A gated ref is checked when its gate is resolved.
func (j *judgeRun) stale(ctx context.Context) []string {
	for i, c := range j.push.Commands {
		if j.verdicts[i].Gate {
			continue
		}
		cur := ""
		if out, err := j.s.Git.Run(ctx, j.dir, nil, "rev-parse", "--verify", "--quiet", c.Ref); err == nil {
			cur = strings.TrimSpace(string(out))
		}
		if (cur == "" && c.Create()) || cur == c.Old {
			continue
		}
		why := "moved since this clone read it"
		if cur != "" {
			why += " (it is at " + short(cur) + " now)"
		}
		why += ": git fetch, rebase onto it (git pull --rebase), then push again"
		for k := range j.verdicts {
			j.verdicts[k].Kind, j.verdicts[k].Reason = RefuseAtomic, "not updated: the push is all-or-nothing and "+c.Ref+" was refused"
		}
		j.verdicts[i].Kind, j.verdicts[i].Reason = RefuseFetchFirst, why
		return refusedLines(j.verdicts)
	}
	return nil
}

// quarantine checks the hook's quarantine paths (inside the repo's
// objects folder, as git makes them) and returns them as an environment.
func (j *judgeRun) quarantine(env map[string]string) ([]string, error) {
	objects := filepath.Join(j.dir, "objects") + "/"
	q := env["GIT_QUARANTINE_PATH"]
	if q == "" && onlyDeletes(j.push.Commands) {
		return []string{}, nil // no pack, no quarantine: nothing new to read
	}
	if q == "" || !strings.HasPrefix(filepath.Clean(q)+"/", objects) || filepath.Clean(env["GIT_OBJECT_DIRECTORY"]) != filepath.Clean(q) {
		return nil, errors.New("no quarantine")
	}
	return []string{"GIT_OBJECT_DIRECTORY=" + q, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(j.dir, "objects"), "GIT_QUARANTINE_PATH=" + q}, nil
}

func sameCommands(a, b []Command) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[Command]int{}
	for _, c := range a {
		seen[c]++
	}
	for _, c := range b {
		if seen[c] == 0 {
			return false
		}
		seen[c]--
	}
	return true
}

func refusedLines(vs []Verdict) []string {
	var lines []string
	for _, v := range vs {
		if !v.OK() && v.Kind != RefuseAtomic {
			lines = append(lines, v.Kind+": "+strings.TrimPrefix(v.Ref, "refs/heads/")+": "+v.Reason)
		}
	}
	return lines
}
