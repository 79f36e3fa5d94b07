package box

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/config"
	"github.com/roster-sh/roster/lib/creds"
	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/repos"
	"github.com/roster-sh/roster/lib/tms"
)

// BoxGitConfig is where a box with [[repo]] grants finds its git config
// (GIT_CONFIG_GLOBAL): in ~/self, read-only to the box.
const BoxGitConfig = BoxSelf + "/gitconfig"

// GitHookCommand is roster-box's hidden command that git receive-pack
// runs as roster's pre-receive hook (repos.HookMain).
const GitHookCommand = "git-hook"

// runGit is the git service of a run of spec (nil when it has no [[repo]]
// grant and no knowledge repo): its knowledge repo (knowledge: "write",
// "read" or "" for none; made if missing, the run/RUN branches of runs
// gone pruned), its mirrors in data/workers/W/repos, each remote's token looked
// up fresh at each use, the secrets the content rules scan for (every
// credential this worker's gateway can resolve), this program as the
// pre-receive hook, and a push to a host repo's protected ref held as a
// repo_push gate on the run's task (an ad-hoc run has none: refused). A grant with no git on the host fails the run's start
// with what is needed. The push journal and the gates go to the run's
// partition, part, with the spec and org the run was prepared with.
func runGit(part *tms.Partition, sources creds.Creds, granted []string, run, task, knowledge string) (*repos.Service, error) {
	h, spec, org := part.Home, part.Spec, part.Org
	if len(spec.Repos) == 0 && knowledge == "" {
		return nil, nil
	}
	bin, err := repos.Find()
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("the git hook: %w", err)
	}
	providers := creds.OrgProviders(org)
	token := func(r config.Repo) (string, error) {
		cr, err := creds.LookupNamed("repo "+r.Name, r.Credential, sources, time.Now())
		return cr.Value, err
	}
	secrets := func() []repos.Secret {
		var out []repos.Secret
		for _, name := range granted {
			if cr, err := creds.Lookup(providers[name], sources, time.Now()); err == nil {
				out = append(out, repos.Secret{Source: name + " (" + cr.Source + ")", Value: cr.Value})
			}
		}
		for _, r := range spec.Repos {
			if cr, err := creds.LookupNamed("repo "+r.Name, r.Credential, sources, time.Now()); err == nil && len(r.Credential) > 0 {
				out = append(out, repos.Secret{Source: "repo " + r.Name + " (" + cr.Source + ")", Value: cr.Value})
			}
		}
		return out
	}
	w := h.Worker(spec.Name)
	svc := &repos.Service{Git: &repos.Git{Bin: bin}, Worker: spec.Name, Dir: filepath.Join(w.Dir, "repos"),
		Repos: spec.Repos, Token: token, Secrets: secrets, HookArgv: []string{self, GitHookCommand}, Run: run}
	if knowledge != "" {
		svc.Knowledge = &repos.Knowledge{Dir: w.Knowledge(), ReadOnly: knowledge == "read"}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := svc.PrepareKnowledge(ctx); err != nil {
			return nil, errs.WithHint(fmt.Errorf("the knowledge repo %s: %w", svc.Knowledge.Dir, err),
				"check it with git fsck; a repo moved aside is made again, empty, at the next run")
		}
	}
	svc.Journal = func(ctx context.Context, refs []repos.RefResult) {
		if err := part.JournalPush(ctx, run, task, refs); err != nil { // the ledger and run.json still have the push
			fmt.Fprintf(os.Stderr, "roster-box: run %s: the journal's push line: %v\n", run, err)
		}
	}
	if task != "" {
		svc.Gate = func(ctx context.Context, g repos.GateRequest) (string, error) {
			return part.OpenRepoGate(ctx, task, run, g.What, g.Wake,
				tms.RepoPush{Repo: g.Repo, Ref: g.Ref, Old: g.Old, New: g.New, Pending: g.Pending})
		}
	}
	return svc, nil
}

// GitConfig is the box's git config for spec's grants: each granted
// repo's real URL rewritten to its gateway route (so `git clone
// https://github.com/acme/app.git` just works), the worker as author, no
// credential helper. A host repo is reached by its path's name:
// `git clone http://127.0.0.1:3128/git/NAME`. knowledge: the run has a
// knowledge repo (the config is written even with no [[repo]]).
func GitConfig(spec *config.Worker, knowledge bool) []byte {
	if len(spec.Repos) == 0 && !knowledge {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# written by roster for this run (read-only): git reaches each granted repo through the gateway\n")
	fmt.Fprintf(&b, "[user]\n\tname = %s\n\temail = %s@roster.invalid\n", spec.Name, spec.Name)
	b.WriteString("[credential]\n\thelper =\n[init]\n\tdefaultBranch = main\n[protocol]\n\tversion = 2\n")
	rs := append([]config.Repo(nil), spec.Repos...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
	for _, r := range rs {
		route := BoxGatewayURL + "/git/" + r.Name
		fmt.Fprintf(&b, "[url %q]\n\tinsteadOf = %s\n", route, r.Remote)
		if t := strings.TrimSuffix(r.Remote, ".git"); !r.Host() && t != r.Remote {
			fmt.Fprintf(&b, "\tinsteadOf = %s\n", t) // the forge's URL without .git, as people copy it
		}
	}
	return []byte(b.String())
}
